"""The JSON checks before parsing: the string skeleton the depth and number limits read."""

import re
import time

from hypothesis import given
from hypothesis import strategies as st

from transforms.strict_json import _STRING, loads

ONE_CHAR_AT_A_TIME = re.compile(r'"(?:[^"\\]|\\.)*(?:"|\\?\Z)', re.DOTALL)
"""The string pattern as first written (one alternation per character): the reference."""


@given(st.text(alphabet='"\\ab{}[]:,0\n\u00e9', max_size=60))
def test_the_unrolled_string_pattern_blanks_what_the_reference_blanks(text: str) -> None:
    assert _STRING.sub('""', text) == ONE_CHAR_AT_A_TIME.sub('""', text)


def test_hostile_strings_are_skipped_in_linear_time() -> None:
    """Escaped quotes, a run of backslashes, unterminated strings: 80 kB each in well
    under a second (a pattern requiring the closing quote took 13 s)."""
    for text in ('"\\"' * 80_000, '"' + "\\" * 240_000, '"a' * 120_000):
        start = time.process_time()
        assert not isinstance(loads(text), dict)
        assert time.process_time() - start < 1.0
