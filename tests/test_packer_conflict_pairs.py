"""Opposite stances are a conflict (rule `polarity`), and a conflict is packed as a pair:
the other side whole, or as the sentence stating it, or named as left out."""

from unittest.mock import patch

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packer import Catalog, PackerRuntime, pack_request, polarity
from packer.polarity import polarity_conflicts
from packer.records import Evidence, text_facts
from packer.runtime import Memos
from packer.statements import same_statement
from schemas import DedupConfig, ExclusionReason, PackingConfig
from tests.factories import candidate, document, request


@pytest.fixture(scope="module")
def runtime() -> PackerRuntime:
    return PackerRuntime.load()


def _records(*texts: str, documents: tuple[str, ...] = ()) -> list[Evidence]:
    out = []
    for k, text in enumerate(texts):
        doc = documents[k] if documents else f"d{k}"
        c = candidate(f"e{k}", doc, text=text)
        out.append(Evidence(c, doc, "r1", None, text, text_facts(text), 0.5, (), None))
    return out


ISLAND = "Tuvalu is a small island nation located in the Pacific Ocean."
FREE = "Tuvalu is definitely free of plastic waste on its beaches."
NOT_FREE = "It is not guaranteed that Tuvalu is definitely free of plastic waste on its beaches."


def test_one_statement_negated_in_another_document_is_a_polarity_conflict():
    records = _records(f"{ISLAND} {FREE}", f"Tourism grew last year. {NOT_FREE}")
    assert polarity_conflicts(records, Memos()) == [(0, 1)]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (FREE, FREE),  # the same polarity
        (FREE, NOT_FREE.replace("plastic waste on its beaches", "debt")),  # another statement
        ("Symphony No. 5 is a symphony by Rouse.", "Symphony 5 is a symphony by Rouse."),
        ('He starred in "Don\'t Drink the Water" in 1994.', "He starred in Drink the Water 1994."),
        ("Neither the mayor nor the council approved the new stadium plan.",
         "The mayor and the council approved the new stadium plan."),  # one negation: a conflict
    ],
)  # fmt: skip
def test_what_is_no_opposite_stance(first, second):
    found = polarity_conflicts(_records(first, second), Memos())
    assert found == ([(0, 1)] if first.startswith("Neither") else [])


def _every_statement_pairs(records: list[Evidence], memos: Memos) -> list[tuple[int, int]]:
    """The rule read literally: every negated statement against every statement of every
    passage of another document (what `polarity_conflicts` prunes must change nothing)."""
    stated = [memos.statements(r.text) for r in records]
    pairs = set()
    for i, mine in enumerate(stated):
        for negative in mine.negated:
            for j, theirs in enumerate(stated):
                a, b = records[i], records[j]
                if a.document_id == b.document_id or (
                    a.facets and b.facets and set(a.facets).isdisjoint(b.facets)
                ):
                    continue
                if any(not t.negated and same_statement(negative, t) for t in theirs.all):
                    pairs.add((min(i, j), max(i, j)))
    return sorted(pairs)


_STATED = st.sampled_from(
    [FREE, NOT_FREE, ISLAND, "Tuvalu isn't free of plastic waste on its beaches.",
     "Visitors must not register at the harbour office.", "Visitors must register at the "
     "harbour office.", "No. 5 was never played in Vienna.", "It was played in Vienna.",
     "ＴＵＶＡＬＵ is ＮＯＴ free of plastic waste!", "U.S. forces did not land there.",
     "WASHINGTON (Reuters) - Tuvalu is not free of plastic waste.", '"Don\'t" he said.']
)  # fmt: skip
_NOISE = st.text(st.sampled_from(list("ab. \n'\u2019\"“”-–,0123456789ｎｏｔ")), max_size=12)


BOTH_INDEXES = pytest.mark.parametrize("scanned", [0, 10_000])
"""The pair search indexing passages by their words looked up, and by scanning them."""


@BOTH_INDEXES
@given(
    st.lists(
        st.tuples(st.lists(st.one_of(_STATED, _NOISE), min_size=1, max_size=4), st.booleans()),
        min_size=1,
        max_size=6,
    )
)
def test_the_pruned_pair_search_finds_exactly_the_pairs_of_every_statement(scanned, parts):
    texts = [" ".join(sentences) for sentences, _ in parts]
    documents = tuple(f"d{k // 2}" if same else f"d{k}" for k, (_, same) in enumerate(parts))
    records = _records(*texts, documents=documents)
    with patch.object(polarity, "SCANNED_WORDS", scanned):
        assert polarity_conflicts(records, Memos()) == _every_statement_pairs(records, Memos())


def test_two_chunks_of_one_document_are_never_a_polarity_conflict():
    records = _records(FREE, NOT_FREE, documents=("d1", "d1"))
    assert polarity_conflicts(records, Memos()) == []


LONG_FREE = (
    f"{ISLAND} Its reefs draw divers from across the region every season. "
    f"The government publishes a report on the state of its coasts each year. {FREE}"
)
LONG_NOT_FREE = (
    "Researchers sampled sand at twelve sites across the atolls over two years. "
    f"They published their findings in a regional journal of marine science. {NOT_FREE}"
)


def _pack(runtime: PackerRuntime, budget: int, *extra: str):
    cands = [
        candidate("e1", "d1", text=LONG_FREE, retrieval_score=0.9),
        candidate("e2", "d2", text=LONG_NOT_FREE, retrieval_score=0.8),
        *(candidate(f"x{k}", f"x{k}", text=t, retrieval_score=0.7) for k, t in enumerate(extra)),
    ]
    docs = [document(c.document_id) for c in cands]
    config = PackingConfig(max_evidence_tokens=budget)
    question = "Is Tuvalu free of plastic waste?"
    return pack_request(request(*cands, question=question), Catalog(docs), config, runtime)


def test_the_other_side_goes_in_as_the_sentence_that_states_it(runtime):
    result = _pack(runtime, 95)  # the compact framing: at 110 the whole side fits
    [conflict] = result.manifest.conflicts
    assert conflict.rules == ["polarity"] and conflict.evidence_ids == ["e1", "e2"]
    text = result.prompt.messages[1].content
    by_id = {e.evidence_id: e for e in result.manifest.evidence}
    assert by_id.keys() == {"e1", "e2"}
    partial = [e for e in by_id.values() if e.partial]
    assert partial and all(e.evidence_id == "e2" for e in partial)
    assert NOT_FREE in text and "Researchers sampled" not in text  # the side, not the opening
    assert "They published" not in text  # an expletive "It is not ... that" leans on nothing
    assert "Conflicting evidence: E1, E2.\n" in text  # compact: the labels alone


def test_a_side_that_does_not_fit_is_named_and_noted(runtime):
    result = _pack(runtime, 44)  # room for one side's sentence, not for the pair's
    shown = {e.evidence_id for e in result.manifest.evidence}
    assert len(shown) == 1
    [missing] = {"e1", "e2"} - shown
    [left] = [x for x in result.exclusions if x.evidence_id == missing]
    assert left.reason == ExclusionReason.CONFLICT_SIDE_OVER_BUDGET
    assert "and a passage left out.\n" in result.prompt.messages[1].content


def test_without_a_flagged_conflict_nothing_is_noted(runtime):
    config = PackingConfig(max_evidence_tokens=75, dedup=DedupConfig(conflict_rules=("copy",)))
    cands = [
        candidate("e1", "d1", text=LONG_FREE, retrieval_score=0.9),
        candidate("e2", "d2", text=LONG_NOT_FREE, retrieval_score=0.8),
    ]
    docs = [document("d1"), document("d2")]
    result = pack_request(request(*cands), Catalog(docs), config, runtime)
    assert not result.manifest.conflicts
    assert "Conflicting" not in result.prompt.messages[1].content
    assert {x.reason for x in result.exclusions} <= {ExclusionReason.OVER_BUDGET}


FILLER = [
    "Shipping to the outer islands takes three weeks by the supply boat.",
    "The capital hosts a market every Saturday morning near the harbour.",
    "Funafuti airport has one runway that doubles as a football pitch.",
]


@given(budget=st.integers(20, 400), fillers=st.integers(0, 3))
def test_never_one_side_silently(runtime, budget, fillers):
    result = _pack(runtime, budget, *FILLER[:fillers])
    shown = {e.evidence_id for e in result.manifest.evidence}
    reasons = {x.evidence_id: x.reason for x in result.exclusions}
    text = result.prompt.messages[1].content
    for conflict in result.manifest.conflicts:
        members = set(conflict.evidence_ids)
        if members & shown and not members <= shown:
            assert all(
                reasons[e] == ExclusionReason.CONFLICT_SIDE_OVER_BUDGET for e in members - shown
            )
            assert "a passage left out" in text


_WORDS = ["harbor", "castle", "violin", "glacier", "comet", "orchard", "lantern", "river",
          "meadow", "falcon", "summit", "canyon"]  # fmt: skip
_SENTENCE = st.tuples(
    st.lists(st.sampled_from(_WORDS), min_size=3, max_size=10, unique=True), st.booleans()
).map(lambda s: f"{' '.join(s[0]).capitalize()} was {'not ' if s[1] else ''}sold in spring.")


@BOTH_INDEXES
@given(st.lists(st.lists(_SENTENCE, min_size=1, max_size=3), min_size=2, max_size=14))
def test_longer_statements_over_many_passages_find_exactly_the_pairs_of_every_statement(
    scanned, passages
):
    """Statements of up to eleven content words (a bound above three: `_reachable` reads
    only the rarest words' postings) over passages sharing most of their words."""
    records = _records(*(" ".join(sentences) for sentences in passages))
    with patch.object(polarity, "SCANNED_WORDS", scanned):
        assert polarity_conflicts(records, Memos()) == _every_statement_pairs(records, Memos())
