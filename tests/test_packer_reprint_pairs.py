"""The reprint and conflict pair search finds exactly the pairs its rule names."""

from itertools import combinations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from packer import reprint_pairs
from packer.records import STOPWORDS, Evidence, TextFacts
from packer.reprint_pairs import PAIRWISE, candidate_pairs
from tests.factories import candidate

# A small vocabulary (stopwords among it), so words open many records: past `PAIRWISE`
# and past a quarter of the records, where a word stops counting.
VOCABULARY = ["w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8", "w9", "the", "of"]
openings = st.lists(st.sampled_from(VOCABULARY), unique=True, max_size=8)
records_of = st.lists(st.tuples(st.integers(0, 5), openings), max_size=90)


def _record(index: int, document: int, opening: list[str]) -> Evidence:
    cand = candidate(f"e{index}", f"d{document}")
    content = tuple(w for w in opening if w not in STOPWORDS)
    facts = TextFacts(None, " ".join(opening), len(opening), tuple(opening), content, False)
    return Evidence(cand, f"d{document}", "r1", None, cand.text, facts, 0.5, (), None)


def _reference(records: list[Evidence]) -> list[tuple[int, int]]:
    """The rule, pair by pair: shared opening content words, counting only words that
    open at most a quarter of the records (and 16) once there are more than `PAIRWISE`."""
    words = [set(r.facts.opening) - STOPWORDS for r in records]
    widest = len(records) if len(records) <= PAIRWISE else max(16, len(records) // 4)
    opens = {w: sum(w in ws for ws in words) for ws in words for w in ws}
    return [
        (i, j)
        for i, j in combinations(range(len(records)), 2)
        if records[i].document_id != records[j].document_id
        and sum(opens[w] <= widest for w in words[i] & words[j])
        >= max(2, 0.4 * min(len(words[i]), len(words[j])))
    ]


SAME_OPENING = ["w0", "w1", "w2"]


@pytest.fixture(params=["kernel", "python"], autouse=True)
def search(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test twice: the C pair search, then its Python twin (`shared_openings`:
    every pair up to `PAIRWISE` records, the prefix filter beyond)."""
    if request.param == "python":
        monkeypatch.setattr(reprint_pairs, "_sharing", reprint_pairs.shared_openings)


# A wider vocabulary: rare and common words in one opening, so a record's prefix of rare
# words (what the pair search is indexed by) is shorter than its counted words.
WIDE_VOCABULARY = [f"v{k}" for k in range(40)] + ["the", "of"]
wide_records_of = st.lists(
    st.tuples(
        st.integers(0, 30),
        st.lists(st.sampled_from(WIDE_VOCABULARY[:6]), unique=True, max_size=4).flatmap(
            lambda common: st.lists(st.sampled_from(WIDE_VOCABULARY[6:]), unique=True).map(
                lambda rare: common + [w for w in rare[:14] if w not in common]
            )
        ),
    ),
    min_size=PAIRWISE + 1,
    max_size=120,
)


@given(records_of)
@example([(i % 2, SAME_OPENING) for i in range(PAIRWISE)])  # every cross-document pair
@example([(i % 2, SAME_OPENING) for i in range(80)])  # no pair: the words open them all
def test_pair_search_finds_exactly_the_pairs_sharing_enough_opening_words(spec):
    records = [_record(i, document, opening) for i, (document, opening) in enumerate(spec)]
    assert candidate_pairs(records) == _reference(records)


def test_a_word_opening_most_records_stops_counting_past_pairwise():
    def pairs(n: int) -> int:
        return len(candidate_pairs([_record(i, i % 2, SAME_OPENING) for i in range(n)]))

    assert pairs(PAIRWISE) == (PAIRWISE // 2) ** 2
    assert pairs(PAIRWISE + 1) == 0


@given(wide_records_of)
def test_pair_search_on_rare_and_common_words_finds_exactly_the_rule_s_pairs(spec):
    records = [_record(i, document, opening) for i, (document, opening) in enumerate(spec)]
    assert candidate_pairs(records) == _reference(records)
