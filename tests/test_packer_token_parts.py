"""The prompt's token count is the sum of its parts' counts, for every supported encoding.

tiktoken splits text into pre-tokens with its encoding's regex, then encodes
each pre-token on its own. So when every boundary between two rendered parts
is a pre-token boundary, the parts' counts add up to the whole's, whatever
the byte-pair ranks. These tests check exactly that, with each encoding's own
pattern, on prompts the packer renders and on arbitrary Unicode in every field.
"""

import re

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st
from tiktoken_ext import openai_public

from packer import Catalog, pack_request
from packer.layout import PromptLayout
from packer.records import Evidence, text_facts
from packer.tokens import ENCODING_FILES
from tests.factories import candidate
from tests.strategies import catalog_documents, requests
from tests.test_packer_properties import RUNTIME, configs


def _pattern(name: str) -> regex.Pattern:
    """The encoding's pre-token regex, read from its constructor without its ranks file."""
    real = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *args, **kwargs: {}
    try:
        return regex.compile(openai_public.ENCODING_CONSTRUCTORS[name]()["pat_str"])
    finally:
        openai_public.load_tiktoken_bpe = real


PATTERNS = {name: _pattern(name) for name in ENCODING_FILES}
BLOCK = re.compile(r"(<(E\d+))((?: [^\n]*)?>\n(?:.*?\n)?)(</\2>\n)", re.DOTALL)


def _assert_parts_add_up(parts: list[str]) -> None:
    whole = "".join(parts)
    for name, pattern in PATTERNS.items():
        split = [piece for part in parts for piece in pattern.findall(part)]
        assert pattern.findall(whole) == split, name


def _parts(user: str) -> list[str]:
    """The user message cut where the packer's ledger cuts it."""
    parts: list[str] = []
    end = 0
    for match in BLOCK.finditer(user):
        assert match.start() == end
        parts += [match.group(1), match.group(3), match.group(4)]
        end = match.end()
    tail = user[end:]
    question = tail.index("Question: ")
    return [*parts, tail[:question], tail[question:]]


def test_every_supported_encoding_has_a_pattern():
    assert set(PATTERNS) == set(ENCODING_FILES)
    assert PATTERNS["cl100k_base"].pattern == RUNTIME.tokens.encoding._pat_str


@given(docs=catalog_documents(), request=requests(), config=configs)
def test_packed_prompts_split_at_pre_token_boundaries(docs, request, config):
    result = pack_request(request, Catalog(docs), config, RUNTIME)
    _assert_parts_add_up(_parts(result.prompt.messages[1].content))


fields = st.text(st.characters(codec="utf-8"), max_size=40)


@given(
    text=st.text(st.characters(codec="utf-8"), min_size=1, max_size=200),
    title=fields,
    section=fields,
    question=fields,
    facet=fields,
    label=st.integers(1, 1000),
    dated=st.booleans(),
)
def test_arbitrary_text_in_every_field_splits_at_part_boundaries(
    text, title, section, question, facet, label, dated
):
    cand = candidate("e1", text=text, title=title, section=section)
    record = Evidence(cand, "d1", "r1", None, text, text_facts(text), 1.0, (), None)
    layout = PromptLayout(RUNTIME.tokens, ("title", "document", "revision", "section", "source"))
    body = layout.body(layout.header(record, dated), text)
    opening, closing = layout.opening(f"E{label}"), layout.closing(f"E{label}")
    for has_evidence in (True, False):
        notes = layout.notes([["E1", f"E{label}"]], layout.facets_note([facet], 2), has_evidence)
        parts = [opening, body, closing] * 2 if has_evidence else []
        _assert_parts_add_up([*parts, notes, layout.question_line(question)])


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_a_double_newline_would_not_split_for_the_older_encodings(name):
    """Why blocks end in one newline: r50k and p50k keep a blank line whole at the end."""
    parts = ["</E1>\n\n", "<E2"]
    whole = PATTERNS[name].findall("".join(parts))
    split = [p for part in parts for p in PATTERNS[name].findall(part)]
    assert (whole == split) == (name not in {"r50k_base", "p50k_base", "p50k_edit"})
