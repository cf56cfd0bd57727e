"""What the publishers a question names tell about the candidates (`packer.sources`):
a name two named publishers' facts share marks what the question asks of both."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packer import Catalog, PackerRuntime, pack_request
from packer.records import Evidence, text_facts
from packer.sources import named_sources
from schemas import PackingConfig
from tests.factories import candidate, document, request

QUESTION = (
    "Which company, reported by both TechCrunch and The Verge, pays billions to stay "
    "the default search engine?"
)
REPORTS = (
    "Court filings show Google paid Apple and Samsung to be the first choice on their phones.",
    "The Justice Department says Google's deals with Apple keep rivals off the iPhone's screen.",
)
FACTS = [  # (publisher, text, retrieval score): short off-topic facts outrank one report
    ("techcrunch", "The ride-hail firm claims assaults on its app fell 38% last year.", 0.55),
    ("theverge", "Beeper Mini rebuilt the iMessage protocol from scratch, its team says.", 0.5),
    ("techcrunch", REPORTS[0], 0.6),
    ("theverge", REPORTS[1], 0.4),
]


def _url(publisher: str, k: int) -> str:
    return f"https://www.{publisher}.com/2023/10/{k}/story"


def _records(facts: list[tuple[str, str]]) -> list[Evidence]:
    out = []
    for k, (publisher, text) in enumerate(facts):
        c = candidate(f"e{k}", f"d{k}", text=text, source_url=_url(publisher, k))
        out.append(Evidence(c, f"d{k}", "r1", None, text, text_facts(text), 0.5, (), None))
    return out


def _named(facts: list[tuple[str, str]], publishers: tuple[str, ...]):
    records = _records(facts)
    terms = [frozenset[str]() for _ in records]
    sources = {p: frozenset({"report"}) for p in publishers}
    return named_sources(records, terms, sources, frozenset(), "google")


def test_a_name_facts_of_two_named_publishers_share_marks_them_and_its_other_holders():
    facts = [(p, t) for p, t, _ in FACTS] + [("wired", "This week Apple shipped a phone.")]
    named = _named(facts, ("techcrunch", "theverge"))
    assert named.publisher == {0: "techcrunch", 1: "theverge", 2: "techcrunch", 3: "theverge"}
    # Apple is in both publishers' facts (Google is the question's own word); the
    # unnamed publisher's fact holding it is marked too, the off-topic ones are not
    assert named.shared == {2, 3, 4}


def test_a_rare_question_term_weighs_more_in_the_share_than_a_common_one():
    """Of the words said of TechCrunch, "report" is in every fact and "siphons" in one:
    the fact holding the rare word holds most of what is said of its publisher."""
    facts = [("techcrunch", f"Fact {k}.") for k in range(4)]
    records = _records(facts)
    terms = [frozenset({"report", "siphon"})] + [frozenset({"report"})] * 3
    sources = {"techcrunch": frozenset({"report", "siphon"})}
    named = named_sources(records, terms, sources, frozenset(), "")
    assert named.term_share[0] == 1.0
    assert 0 < named.term_share[1] < 0.25 < 0.75 < named.term_share[0]
    assert named.term_share[1] == named.term_share[2] == named.term_share[3]


@given(
    st.lists(st.frozensets(st.sampled_from(["a", "b", "c", "d"])), min_size=1, max_size=8),
    st.frozensets(st.sampled_from(["a", "b", "c", "d", "e"])),
)
def test_the_weighted_share_is_a_share(held, said):
    records = _records([("wired", f"Fact {k}.") for k in range(len(held))])
    named = named_sources(records, held, {"wired": said}, frozenset(), "")
    for i, share in named.term_share.items():
        assert 0.0 <= share <= 1.0 + 1e-12
        assert (share == 0.0) == (not held[i] & said)
        assert (share >= 1.0 - 1e-12) == bool(said and said <= held[i])


def test_no_name_is_shared_with_a_single_named_publisher():
    facts = [("techcrunch", "Google paid Apple."), ("techcrunch", "Apple sued Google.")]
    assert _named(facts, ("techcrunch",)).shared == frozenset()
    assert _named(facts, ()).publisher == {}


@pytest.fixture(scope="module")
def runtime() -> PackerRuntime:
    return PackerRuntime.load()


def test_the_facts_sharing_a_name_across_named_publishers_win_the_room(runtime):
    """Room for two of four facts: with the shared name the two reports of the company
    both publishers speak of go in, without it the two short off-topic ones, cheaper
    per token though one report ranks first."""
    cands = [
        candidate(f"e{k}", f"d{k}", text=text, source_url=_url(p, k), retrieval_score=score)
        for k, (p, text, score) in enumerate(FACTS)
    ]
    docs = [document(f"d{k}") for k in range(len(FACTS))]
    evidence_only = PackingConfig(enable_sentence_units=False)
    probe = pack_request(request(*cands[2:], question=QUESTION), Catalog(docs[2:]),
                         evidence_only, runtime)  # fmt: skip
    budget = probe.manifest.budget.used + 2

    def packed(shared_name: float) -> set[str]:
        config = evidence_only.model_copy(
            update={
                "max_evidence_tokens": budget,
                "weights": evidence_only.weights.model_copy(update={"shared_name": shared_name}),
            }
        )
        result = pack_request(request(*cands, question=QUESTION), Catalog(docs), config, runtime)
        return {e.evidence_id for e in result.manifest.evidence}

    assert packed(PackingConfig().weights.shared_name) == {"e2", "e3"}
    assert packed(0.0) == {"e0", "e1"}


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["techcrunch", "theverge", "wired"]),
            st.text(alphabet=st.sampled_from(list("AaBb Gg.,'é\u0130")), max_size=40),
        ),
        max_size=8,
    )
)
def test_any_texts_are_read_and_only_named_publishers_share_names(facts):
    named = _named(facts, ("techcrunch", "theverge"))
    assert set(named.publisher.values()) <= {"techcrunch", "theverge"}
    assert named.shared <= set(range(len(facts)))
    if len(set(named.publisher.values())) < 2:
        assert named.shared == frozenset()
