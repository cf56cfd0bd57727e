"""The JSON checks before parsing: the string skeleton the depth and number limits read."""

import re
import time

from hypothesis import given
from hypothesis import strategies as st

from packer.parsing.strict_json import _STRING, Refused, _outside_strings, loads

ONE_CHAR_AT_A_TIME = re.compile(r'"(?:[^"\\]|\\.)*(?:"|\\?\Z)', re.DOTALL)
"""The string pattern as first written (one alternation per character): the reference."""


@given(st.text(alphabet='"\\ab{}[]:,0\n\u00e9', max_size=60))
def test_the_unrolled_string_pattern_blanks_what_the_reference_blanks(text: str) -> None:
    assert _STRING.sub('""', text) == ONE_CHAR_AT_A_TIME.sub('""', text)


@given(st.text(alphabet='"\\ab{}[]:,0\n\u00e9', max_size=60))
def test_strings_found_by_splitting_are_the_strings_the_pattern_finds(text: str) -> None:
    """Exactly, unless a backslash stands outside every string (then the text is no JSON)."""
    reference = ONE_CHAR_AT_A_TIME.sub('""', text)
    if "\\" not in reference:
        assert _outside_strings(text) == reference


def test_a_limit_is_confirmed_before_a_record_is_refused_for_it() -> None:
    """Past a backslash outside the strings, splitting on quotes sees brackets the pattern
    takes for a string; the parser stops at that backslash, and says so."""
    text = '\\"' + "[" * 40
    assert _outside_strings(text) != ONE_CHAR_AT_A_TIME.sub('""', text)
    refused = loads(text)
    assert isinstance(refused, Refused) and "deeper" not in refused.reason


def test_hostile_strings_are_skipped_in_linear_time() -> None:
    """Escaped quotes, a run of backslashes, unterminated strings: 80 kB each in well
    under a second (a pattern requiring the closing quote took 13 s)."""
    for text in ('"\\"' * 80_000, '"' + "\\" * 240_000, '"a' * 120_000):
        start = time.process_time()
        assert not isinstance(loads(text), dict)
        assert time.process_time() - start < 1.0


def test_printable_escapes_exactly_the_c_categories_at_every_code_point() -> None:
    """Every code point: a C* character (control, format, surrogate, private use,
    unassigned) is escaped, any other is kept, whether or not the string's fast path
    (`str.isprintable`) is taken."""
    import sys
    import unicodedata

    from packer.parsing.strict_json import printable

    for cp in range(sys.maxunicode + 1):
        ch = chr(cp)
        escaped = unicodedata.category(ch).startswith("C")
        assert (printable(ch) != ch) == escaped, hex(cp)
        assert (printable("a" + ch) != "a" + ch) == escaped, hex(cp)
