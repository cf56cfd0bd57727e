"""Selection rules that must mean the same in every request: calibrated relevance, the
conflict pair first, every answer covered before relevance fill."""

from itertools import pairwise, permutations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packer import Catalog, PackerRuntime, pack_request
from packer.answers import distinct_answers, opposite_sides, positions
from packer.changes import states_change
from packer.first import PAIR_RANKS
from packer.question import read_question
from packer.records import Evidence, text_facts
from packer.relevance import calibrated, min_max
from packer.runtime import Memos
from schemas import PackingConfig, UtilityWeights
from tests.factories import candidate, document, request


def _evidence(c) -> Evidence:
    return Evidence(c, c.document_id, "r1", None, c.text, text_facts(c.text), 0.5, (), None)


@pytest.fixture(scope="module")
def runtime() -> PackerRuntime:
    return PackerRuntime.load()


SCORES = st.lists(st.floats(min_value=0.0, max_value=1e6, allow_nan=False), min_size=1)


def test_relevance_of_a_short_request_is_that_of_a_long_one():
    """Four candidates or fifty: the same rank and share of the top score, the same
    relevance (min-max gave the lowest of a short list 0, the same passage 0.44 in a
    long one)."""
    short = [10.0, 9.0, 8.0, 5.0]
    long = short + [1.0] * 46
    assert calibrated(short) == calibrated(long)[:4]
    assert min_max(short)[3] == 0.0 < min_max(long)[3]
    assert calibrated(short)[3] == pytest.approx(2 / 5 * 0.5)


def test_relevance_without_positive_scores_is_the_rank_alone():
    assert calibrated([-1.0, -2.0, -3.0]) == [1.0, pytest.approx(2 / 3), 0.5]
    assert calibrated([]) == []


@given(SCORES, st.floats(min_value=0.01, max_value=100.0))
def test_relevance_is_bounded_ordered_and_scale_free(scores, scale):
    out = calibrated(scores)
    assert all(0.0 <= r <= 1.0 for r in out)
    by_score = sorted(zip(scores, out, strict=True), reverse=True)
    assert all(a[1] >= b[1] for a, b in pairwise(by_score))
    scaled = calibrated([s * scale for s in scores])
    if all(s * scale > 0 or s == 0 for s in scores):
        assert scaled == pytest.approx(out)


FILLER = "Visitors arrive by boat from Fiji twice a week during the dry season."
FREE = "Tuvalu is definitely free of plastic waste on its beaches."
NOT_FREE = "It is not guaranteed that Tuvalu is definitely free of plastic waste on its beaches."
SHORT = ["Tuvalu beaches are sunny.", "Tuvalu plastic bags are banned.", "Tuvalu waste is shipped.",
         "Tuvalu is free of snakes.", "Plastic waste is on beaches."]  # fmt: skip


def _pair_request(runtime, budget: int, extra=None, **config):
    cands = [
        candidate("side1", "d1", text=f"{FILLER} {FREE}", retrieval_score=9.0),
        candidate("side2", "d2", text=f"{FILLER.replace('Fiji', 'Samoa')} {NOT_FREE}",
                  retrieval_score=8.5),
        *(candidate(f"short{k}", f"s{k}", text=t, retrieval_score=8.0 - k)
          for k, t in enumerate(SHORT)),
        *([extra] if extra else []),
    ]  # fmt: skip
    docs = [document(c.document_id) for c in cands]
    return pack_request(
        request(*cands, question="Is Tuvalu free of plastic waste on its beaches?"),
        Catalog(docs),
        PackingConfig(max_evidence_tokens=budget, **config),
        runtime,
    )


@pytest.mark.parametrize("budget", [50, 60, 70])
def test_a_detected_disagreement_goes_in_as_a_pair_before_short_passages(runtime, budget):
    """Both sides with their note, before the short passages that win per token; without
    the rule the short ones crowd a side out (per bare token at every budget here; with
    the block overhead only at 50, so the greedy alone is judged without it)."""
    packed = _pair_request(runtime, budget)
    shown = {e.evidence_id for e in packed.manifest.evidence}
    assert {"side1", "side2"} <= shown
    assert [sorted(c.evidence_ids) for c in packed.manifest.conflicts] == [["side1", "side2"]]
    assert packed.manifest.budget.used <= budget
    bare = UtilityWeights(block_overhead=0.0)
    greedy = _pair_request(runtime, budget, enable_pairs_first=False, weights=bare)
    assert not {"side1", "side2"} <= {e.evidence_id for e in greedy.manifest.evidence}


@pytest.mark.parametrize("budget", [100, 110, 130])
def test_sides_a_conflict_pair_holds_already_admit_nothing_more(runtime, budget):
    """The conflict pair is the question's two sides: the sides add no passage (a shorter
    one affirming, ranked below the pair, is left to the fill), the pair stays flagged."""
    free = "Tuvalu is free of plastic waste on its beaches, officials say."
    extra = candidate("yes", "s9", text=free, retrieval_score=2.0)
    on = _pair_request(runtime, budget, extra=extra)
    off = _pair_request(runtime, budget, extra=extra, enable_sides_first=False)
    assert [sorted(c.evidence_ids) for c in on.manifest.conflicts] == [["side1", "side2"]]
    assert on.prompt.messages == off.prompt.messages


@pytest.mark.parametrize(
    ("unit", "partner", "changed"),
    [
        ("Nov 24, 2023 (Reuters).", "Nov 24, 2023 (Reuters). Exports rose 5% in May.", False),
        ("Exports rose 7% in May.", "Nov 24, 2023 (Reuters). Exports rose 5% in May.", True),
        (NOT_FREE, f"{FILLER} {FREE}", True),
        (FREE, f"{FILLER} {FREE}", False),
    ],
)
def test_a_side_unit_must_state_the_changed_fact(unit, partner, changed):
    memos = Memos()
    mine, theirs = memos.statements(unit).all, memos.statements(partner).all
    assert states_change(unit, partner, mine, theirs) is changed


REEF = " Its lagoon is calm and its reefs draw divers from across the region each season."
ISLANDS_Q = "How many islands does Tuvalu have?"
ISLANDS = [
    *(candidate(f"top{k}", f"t{k}", text=t, retrieval_score=9.0 - k) for k, t in enumerate(
        ["Tuvalu islands are low and flat.", "Tuvalu islands face rising seas.",
         "The islands of Tuvalu are remote.", "Tuvalu has many islands and atolls."])),
    *(candidate(f"ans{k}", f"a{k}", text=f"Tuvalu has 9 islands, {who} says.{REEF}",
                retrieval_score=3.0 - k / 10)
      for k, who in enumerate(["the guide", "a survey", "the atlas"])),
    candidate("other", "o1", text=f"Tuvalu has 6 islands, a map says.{REEF}", retrieval_score=2.0),
]  # fmt: skip


def test_the_answers_candidates_assert_most_carried_first():
    records = [_evidence(c) for c in ISLANDS]
    found = distinct_answers(records, "number", read_question(ISLANDS_Q).terms, Memos())
    assert [(a.key, a.carriers) for a in found] == [("9 islands", (4, 5, 6)), ("6 islands", (7,))]
    polar = read_question("Is Tuvalu free of plastic waste on its beaches?")
    sides = [_evidence(candidate(f"p{k}", text=t)) for k, t in enumerate([FREE, NOT_FREE, FREE])]
    found = distinct_answers(sides, "polar", polar.terms, Memos())
    assert [(a.key, a.carriers) for a in found] == [("affirm", (0, 2)), ("deny", (1,))]


@pytest.mark.parametrize("budget", [50, 60, 66])
def test_an_answer_three_candidates_assert_gets_a_whole_passage(runtime, budget):
    """Short passages without the answer win per token; with `enable_answers_first` the
    cheapest whole passage stating the top answer goes in before them."""

    def shown(on: bool) -> set[str]:
        config = PackingConfig(max_evidence_tokens=budget, enable_answers_first=on,
                               enable_dedup=False)  # fmt: skip
        docs = [document(c.document_id) for c in ISLANDS]
        packed = pack_request(request(*ISLANDS, question=ISLANDS_Q), Catalog(docs), config, runtime)
        assert packed.manifest.budget.used <= budget
        return {e.evidence_id for e in packed.manifest.evidence if not e.partial}

    assert "ans0" in shown(True)
    assert not {"ans0", "ans1", "ans2"} & shown(False)


@given(
    st.lists(st.text(max_size=120), min_size=1, max_size=5),
    st.sampled_from(["number", "date", "name", "polar"]),
    st.text(max_size=60),
)
def test_answers_of_any_text_are_carried_by_real_candidates(texts, kind, question):
    """Whatever the passages and question say, every answer names carriers among them,
    each once, most carried first."""
    records = [_evidence(candidate(f"e{k}", text=t)) for k, t in enumerate(texts)]
    found = distinct_answers(records, kind, read_question(question).terms, Memos())
    carried = [i for a in found for i in a.carriers]
    assert len(carried) == len(set(carried)) and set(carried) <= set(range(len(texts)))
    assert [len(a.carriers) for a in found] == sorted(
        (len(a.carriers) for a in found), reverse=True
    )


COFFEE_Q = "Does drinking coffee lower the risk of type 2 diabetes?"
COFFEE = {
    "yes-long": (
        "A pooled analysis of 30 prospective cohort studies, following more than 1.1 million "
        "adults for up to 20 years, found that drinking coffee lowers the risk of type 2 "
        "diabetes. Each additional daily cup was associated with a 6% lower risk, and the "
        "association held for both caffeinated and decaffeinated coffee. The authors adjusted "
        "for age, body mass index, smoking, physical activity and alcohol intake, and the "
        "result was consistent across men and women and across the United States, Europe and "
        "Asia. They suggest that chlorogenic acid and magnesium in coffee improve insulin "
        "sensitivity and glucose metabolism, although the cohorts could not rule out that "
        "coffee drinkers differ from others in ways the questionnaires did not capture, such "
        "as diet quality or sleep."
    ),
    "yes-short": (
        "In the Nurses' Health Study, women who drank four or more cups of coffee a day had a "
        "lower risk of type 2 diabetes than women who drank none."
    ),
    "no-trial": (
        "A randomized trial that assigned 126 adults to five cups of coffee a day or to water "
        "for 24 weeks found that drinking coffee did not lower the risk markers of type 2 "
        "diabetes: fasting glucose and insulin resistance did not change."
    ),
    "no-genes": (
        "Mendelian randomization studies, which use genes that shape coffee intake, found no "
        "evidence that drinking coffee lowers the risk of type 2 diabetes."
    ),
}


VITAMIN_Q = "Does vitamin D supplementation prevent bone fractures in older adults?"
VITAMIN = {
    "yes-meta": (
        "A meta-analysis of 11 randomized trials with 31,022 participants aged 65 or older "
        "found that vitamin D supplementation at 800 IU a day or more prevents bone fractures "
        "in older adults: hip fractures fell by 30% and other non-vertebral fractures by 14%. "
        "Lower doses showed no benefit. The effect was clearest in people who also took "
        "calcium and in those living in care homes."
    ),
    "yes-homes": (
        "Among nursing home residents, daily vitamin D supplementation with calcium prevented "
        "bone fractures in older adults who were deficient."
    ),
    "no-vital": (
        "The VITAL trial, which followed 25,871 adults for five years, found that vitamin D "
        "supplementation did not prevent bone fractures in older adults, and falls did not "
        "decrease either; the result held for men and women and for every dose group, "
        "although few participants were deficient at the start."
    ),
    "no-review": (
        "A 2018 review found that vitamin D supplementation does not prevent bone fractures "
        "in older adults living independently."
    ),
    "other-sun": (
        "Ten to fifteen minutes of midday sun on the arms and face makes enough vitamin D "
        "for most adults in summer."
    ),
}
REMOTE_Q = "Is remote work associated with higher employee productivity?"
REMOTE = {
    "yes-agency": (
        "A two-year study of 16,000 call-centre staff at a travel agency, who were assigned "
        "to home or office by lottery, found that remote work was associated with higher "
        "employee productivity: calls handled rose by 13%, sick days fell, and quitting "
        "halved. Part of the gain came from quieter surroundings and part from longer "
        "shifts, and the firm extended the option to all staff after the study ended."
    ),
    "yes-survey": (
        "Surveys of 30,000 managers show that remote work is associated with higher "
        "employee productivity."
    ),
    "no-engineers": (
        "Remote work was not associated with higher employee productivity in a study of "
        "10,000 software engineers, although they worked longer hours."
    ),
    "no-data-entry": (
        "In a field experiment with data-entry workers in India, who typed the same forms "
        "at home or in an office, remote work was not associated with higher employee "
        "productivity: those at home entered 18% fewer forms an hour, and the gap was "
        "largest among workers who lived with young children."
    ),
    "other-offices": (
        "Office occupancy in large cities stayed near half of its 2019 level through 2023."
    ),
    "yes-output": (
        "Across 800 firms, each rise in the share of remote work was associated with higher "
        "employee productivity, measured as output per hour, in the following year, while "
        "the firms' costs for office space fell."
    ),
}
YES_NO_CASES = [(COFFEE_Q, COFFEE), (VITAMIN_Q, VITAMIN), (REMOTE_Q, REMOTE)]


def _pack_ranked(runtime, question: str, texts: dict[str, str], ranked, budget: int, **config):
    cands = [
        candidate(key, f"d{k}", text=texts[key], retrieval_score=9.0 - k)
        for k, key in enumerate(ranked)
    ]
    docs = [document(c.document_id) for c in cands]
    settings = PackingConfig(max_evidence_tokens=budget, **config)
    packed = pack_request(request(*cands, question=question), Catalog(docs), settings, runtime)
    assert packed.manifest.budget.used <= budget
    return packed


def _whole_sides(runtime, question: str, texts: dict[str, str], ranked, budget: int):
    packed = _pack_ranked(runtime, question, texts, ranked, budget)
    return {e.evidence_id.split("-")[0] for e in packed.manifest.evidence if not e.partial}


@pytest.mark.parametrize("budget", [150, 200, 250, 300])
@pytest.mark.parametrize(("question", "texts"), YES_NO_CASES, ids=["coffee", "vitamin", "remote"])
def test_a_yes_no_question_gets_one_whole_passage_of_each_side(runtime, question, texts, budget):
    """Passages of both sides in every rank order (the best-ranked often too long for a
    tight budget): a whole passage of each side goes in, not the long one's side twice
    and the other as a fragment (min-max relevance gave the last of four candidates 0),
    with the default config: the shortest passage of each side goes in first."""
    missed = [
        ranked
        for ranked in permutations(texts)
        if not {"yes", "no"} <= _whole_sides(runtime, question, texts, ranked, budget)
    ]
    assert not missed, f"{len(missed)} rank orders lack a whole passage of a side: {missed[:3]}"


def test_each_side_of_a_yes_no_question_is_read_from_its_main_clause():
    """The fixtures' sides, each read as its main clause says (a relative clause holding
    `none`, two negations across a colon)."""
    for question, texts in YES_NO_CASES:
        terms = read_question(question).terms
        records = [_evidence(candidate(key, key, text=text)) for key, text in texts.items()]
        for side in ("yes", "no"):
            some = [r for r in records if not r.evidence_id.startswith(side)]
            found = opposite_sides(some, positions(some, terms, Memos()), PAIR_RANKS)
            assert found is None, f"{question}: a pair without a {side} passage"
        read = positions(records, terms, Memos())
        for k, record in enumerate(records):
            if not record.evidence_id.startswith("other"):
                assert read[k] is record.evidence_id.startswith("no"), record.evidence_id
        pair = opposite_sides(records, read, PAIR_RANKS)
        assert pair is not None
        assert {records[k].evidence_id[:3] for k in pair} == {"yes", "no-"}


@pytest.mark.parametrize(("question", "texts"), YES_NO_CASES, ids=["coffee", "vitamin", "remote"])
def test_the_two_sides_are_an_answer_covered_not_a_conflict(runtime, question, texts):
    """The pair of sides carries no conflict note and makes no conflict group: it claims
    no disagreement (conflict precision does not count it). Switched off, the same
    request packs a side fewer whole in some rank order."""
    missed_without = 0
    for ranked in permutations(texts):
        packed = _pack_ranked(runtime, question, texts, ranked, 150)
        assert packed.manifest.conflicts == []
        assert "Conflicting evidence" not in packed.prompt.messages[-1].content
        off = _pack_ranked(runtime, question, texts, ranked, 150, enable_sides_first=False)
        whole = {e.evidence_id.split("-")[0] for e in off.manifest.evidence if not e.partial}
        missed_without += not {"yes", "no"} <= whole
    assert missed_without > 0


@pytest.mark.parametrize("budget", [150, 250])
def test_a_question_that_is_not_yes_no_is_untouched_by_the_sides(runtime, budget):
    """Same passages, asked a wh-question: the packet is the same with the sides on or off."""
    question = "Which trial measured coffee and the risk of type 2 diabetes?"
    for ranked in list(permutations(COFFEE))[::7]:
        on = _pack_ranked(runtime, question, COFFEE, ranked, budget)
        off = _pack_ranked(runtime, question, COFFEE, ranked, budget, enable_sides_first=False)
        assert on.prompt.messages == off.prompt.messages
        assert [e.evidence_id for e in on.manifest.evidence] == [
            e.evidence_id for e in off.manifest.evidence
        ]
