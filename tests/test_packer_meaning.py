"""Folding removes formatting only: an edit that changes a fact is never folded away."""

import sys
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from packer import Catalog, PackerRuntime, pack_request
from packer.records import canonical_words, fold_case
from schemas import PackingConfig
from tests.factories import candidate, document, request

RUNTIME = PackerRuntime.load()
DUPLICATE = {"duplicate_exact", "duplicate_near", "duplicate_overlap"}

# A sentence of news-like words, each slot filled from words that reach the edges:
# names, numbers with separators and decimals, units, stopwords, punctuation.
subjects = st.sampled_from(["The council", "Acme Corp.", "The U.S. agency", "Mayor Jane Smith"])
verbs = st.sampled_from(["is", "was", "are", "reported", "approved"])
numbers = st.sampled_from(["4,000", "3.5", "12", "0.25", "1,250,000", "7"])
units = st.sampled_from(["dollars", "km", "people", "tonnes", "per year", "million"])
tails = st.sampled_from(["", " on Monday.", ", officials said.", " in March 2024.", "."])


@st.composite
def sentences(draw: st.DrawFn) -> tuple[str, str]:
    """(text with a `{}` where a number stands, that number)."""
    subject, verb, unit, tail = draw(subjects), draw(verbs), draw(units), draw(tails)
    return f"{subject} {verb} the limit of {{}} {unit}{tail}", draw(numbers)


def _meaning_edit(kind: str, template: str, number: str) -> tuple[str, str]:
    """The same sentence twice, differing in one thing that changes what it says."""
    plain = template.format(number)
    pairs = {
        "sign": (plain, template.format("-" + number)),
        "unicode minus": (plain, template.format("\u2212" + number)),
        "plus or minus": (template.format("+" + number), template.format("-" + number)),
        "currency": (template.format("$" + number), template.format("\u20ac" + number)),
        "percent": (template.format(number + "%"), plain),
        "operator": (template.format("<" + number), template.format(">" + number)),
        "superscript": (template.format(number + "\u00b2"), template.format(number + "2")),
        "exponent sign": (template.format("10\u207b\u00b3"), template.format("10\u00b3")),
        "modal": (plain.replace(" the limit", " must be the limit", 1),
                  plain.replace(" the limit", " may be the limit", 1)),
        "negation": (plain, plain.replace(" the limit", " not the limit", 1)),
        "contraction": (plain.replace(" the limit", " can be the limit", 1),
                        plain.replace(" the limit", " can't be the limit", 1)),
    }  # fmt: skip
    return pairs[kind]


MEANING_EDITS = (
    "sign",
    "unicode minus",
    "plus or minus",
    "currency",
    "percent",
    "operator",
    "superscript",
    "exponent sign",
    "modal",
    "negation",
    "contraction",
)


def _pack(a: str, b: str, same_revision: bool):
    """`a` and `b` as two candidates: of two documents, or two chunks of one revision."""
    second = "d1" if same_revision else "d2"
    docs = [document("d1"), document("d2")]
    cands = [
        candidate("e1", "d1", text=a, retrieval_score=0.9),
        candidate("e2", second, text=b, retrieval_score=0.1),
    ]
    return pack_request(request(*cands), Catalog(docs), PackingConfig(), RUNTIME)


@given(
    sentence=sentences(),
    kind=st.sampled_from(MEANING_EDITS),
    repeat=st.integers(1, 3),
    same_revision=st.booleans(),
)
def test_a_meaning_edit_is_never_folded(sentence, kind, repeat, same_revision):
    """Sign, currency, percent, operator, superscript, modal or negation: the two
    texts stay two blocks (or a flagged conflict), whatever dedup level looks at them."""
    a, b = (" ".join([text] * repeat) for text in _meaning_edit(kind, *sentence))
    assert canonical_words(a) != canonical_words(b)
    result = _pack(a, b, same_revision)
    assert not {x.reason.value for x in result.exclusions} & DUPLICATE
    assert all(block.derived_from == [] for block in result.manifest.evidence)


@given(sentence=sentences(), kind=st.sampled_from(MEANING_EDITS))
def test_a_meaning_edit_across_documents_is_flagged_as_a_conflict(sentence, kind):
    a, b = _meaning_edit(kind, *sentence)
    result = _pack(a, b, same_revision=False)
    assert [c.evidence_ids for c in result.manifest.conflicts] == [["e1", "e2"]]


def _formatting_edit(kind: str, text: str) -> str:
    edits = {
        "case": text.upper(),
        "whitespace": "  ".join(text.split(" ")),
        "thousands": text.replace(",0", "0").replace(",2", "2"),
        "acronym": text.replace("U.S.", "US"),
        "dateline": "WASHINGTON (Reuters) - " + text,
        "typography": text.replace(" ", "\u00a0").replace("5", "\uff15"),
    }
    return edits[kind]


@given(
    sentence=sentences(),
    kind=st.sampled_from(["case", "whitespace", "thousands", "acronym", "dateline", "typography"]),
)
def test_a_formatting_edit_still_folds_as_an_exact_duplicate(sentence, kind):
    text = sentence[0].format(sentence[1])
    result = _pack(text, _formatting_edit(kind, text), same_revision=False)
    [block] = result.manifest.evidence
    assert (block.evidence_id, block.derived_from) == ("e1", ["e2"])


SUPER_OR_SUB = [
    chr(c)
    for c in range(sys.maxunicode + 1)
    if unicodedata.decomposition(chr(c)).startswith(("<super>", "<sub>"))
]


def test_no_superscript_or_subscript_is_folded_to_its_base():
    """Every one in Unicode (`records` lists the ranges they sit in, to scan fast)."""
    folded = [c for c in SUPER_OR_SUB if fold_case("x" + c) != "x" + c.casefold()]
    assert folded == []
    assert (
        fold_case("10\u207b\u00b3 km\u00b2 \u2212 H\u2082O") == "10\u207b\u00b3 km\u00b2 - h\u2082o"
    )
