"""Conflict precision: copies that differ only by where they were cut, the order of a
figure's units, an alias or a censored word are one claim; a plain disagreement on the
amount asked is flagged (rule `amount`). Every case goes through `pack_request`."""

from itertools import combinations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packer import Catalog, PackerRuntime, pack_request
from packer.amounts import asked_dimension
from packer.equivalence import (
    _MASKED,
    _PLACEHOLDER,
    censored,
    other_text,
    readings,
    unrendered,
)
from packer.question import read_question
from packer.records import canonical_words
from packer.slot_conflicts import conflict_groups
from schemas import DedupConfig, PackingConfig
from tests.factories import candidate, document, request


@pytest.fixture(scope="module")
def runtime() -> PackerRuntime:
    return PackerRuntime.load()


def _conflicts(runtime, first: str, second: str, question: str = "What happened?", **config):
    cands = [
        candidate("e1", "d1", text=first, retrieval_score=0.9),
        candidate("e2", "d2", text=second, retrieval_score=0.8),
    ]
    docs = Catalog([document("d1"), document("d2")])
    packing = PackingConfig(max_evidence_tokens=1000, **config)
    result = pack_request(request(*cands, question=question), docs, packing, runtime)
    return [(c.evidence_ids, c.rules) for c in result.manifest.conflicts]


MEALS = "Meals on business travel are reimbursed up to $75 per day."
ALLOWANCE = "The meal allowance while travelling is $60 per day."
ASKED = "How much is the meal allowance per day?"


def test_the_plain_disagreement_on_the_amount_asked_is_flagged(runtime):
    assert _conflicts(runtime, MEALS, ALLOWANCE, ASKED) == [(["e1", "e2"], ["amount"])]


@pytest.mark.parametrize(
    ("second", "question"),
    [
        (ALLOWANCE.replace("$60", "$75"), ASKED),  # the same amount
        (ALLOWANCE.replace("$60", "USD 75"), ASKED),  # the same amount, its code
        (ALLOWANCE.replace("per day", "per week"), ASKED),  # another period
        (ALLOWANCE, "Who sets the meal allowance?"),  # no amount asked
        (ALLOWANCE, "How many meals are reimbursed per day?"),  # a count, not money
    ],
)
def test_what_is_no_disagreement_on_the_amount(runtime, second, question):
    assert _conflicts(runtime, MEALS, second, question) == []


def test_the_amount_rule_can_be_switched_off(runtime):
    assert _conflicts(runtime, MEALS, ALLOWANCE, ASKED, dedup=DedupConfig(
        conflict_rules=("copy", "polarity"))) == []  # fmt: skip


BRIDGE = "The new bridge spans {} across the bay and opened to traffic in March 2019."
COUNCIL = "The council approved the budget on Tuesday after the plant hired {}"
MEMBER = (
    "Richard Aldworth, a son of the house, served as MP for {}. His only sibling was "
    "his sister Frances, who married Francis Jalabert in London."
)
"""A wiki page copied twice, once with its constituency templates left unrendered."""


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (BRIDGE.format("12 km (7.5 miles)"), BRIDGE.format("7.5 miles (12 km)")),  # unit order
        ("The summit opened in Los Angeles on Monday with twelve leaders attending.",
         "The summit opened in LA on Monday with twelve leaders attending."),  # an alias
        (COUNCIL.format("4,500 people."), COUNCIL.format("4,5")),  # a truncated tail
        ("The senator called the proposal a damn disgrace during the debate in Washington.",
         "The senator called the proposal a d*** disgrace during the debate in Washington."),
        ("The coach said the referee was a bloody fool after the match in Leeds on Sunday.",
         "The coach said the referee was a [expletive] fool after the match in Leeds on Sunday."),
        ("The town covers 99.3/km² of farmland and forest along the river valley in Iowa.",
         "The town covers 99.3/km 2 of farmland and forest along the river valley in Iowa."),
        (MEMBER.format("Reading, Wallingford, and Tavistock"),
         MEMBER.format("Template : Constlk, Template : Constlk, and Template : Constlk")),
    ],
)  # fmt: skip
def test_one_claim_written_otherwise_is_no_conflict(runtime, first, second):
    assert _conflicts(runtime, first, second) == []


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (BRIDGE.format("12 km"), BRIDGE.format("15 km")),  # a changed figure
        (COUNCIL.format("4,500 people."), COUNCIL.format("5,200 people.")),  # at the end
        ("The senator called the proposal a damn disgrace during the debate in Washington.",
         "The senator called the proposal a fine disgrace during the debate in Washington."),
        (MEMBER.format("Reading, Wallingford, and Tavistock"),  # a template is no glue
         MEMBER.format("Reading, Wallingford, and Template : Constlk Oxford")),
    ],
)  # fmt: skip
def test_a_changed_fact_is_still_a_conflict(runtime, first, second):
    assert _conflicts(runtime, first, second) == [(["e1", "e2"], ["copy"])]


def test_what_the_question_asks_an_amount_in():
    assert asked_dimension(read_question(ASKED)) == "currency"
    assert asked_dimension(read_question("How many square miles is the Big Island?")) == "area"
    assert asked_dimension(read_question("How many laps make a 10,000 metres race?")) is None
    assert asked_dimension(read_question("What is the population of Kensett?")) is None


def test_km_2_is_one_area_and_no_number_of_its_own():
    [area] = readings(["99.3", "km", "2"])
    assert area.dimension == "area" and area.value == pytest.approx(99.3e6)


_TEXT = st.text(st.sampled_from(list("ab d*#-_[]()expletiv 12.,")), max_size=40)
_WORDS = st.lists(st.sampled_from(["d", "damn", "f", "k", "expletive", "4", "45", "x"]), max_size=3)


@given(_WORDS, _WORDS, _TEXT, _TEXT)
def test_reading_censored_words_never_fails_and_needs_a_mask(left, right, text_a, text_b):
    found = censored(left, right, text_a, text_b)
    assert not found or any(c in text_a + text_b for c in "*#-_[(")


@given(st.one_of(_TEXT, st.text()))
def test_a_mask_or_a_placeholder_is_found_only_beside_the_marks_searched_for(text):
    """`censored` searches a text only when it holds one of these marks."""
    if _MASKED.search(text):
        assert any(mark in text for mark in ("*", "#", "--", "__"))
    if _PLACEHOLDER.search(text):
        assert "[" in text or "(" in text


def test_only_templates_and_their_glue_are_unrendered():
    assert unrendered(canonical_words("Template : Constlk, Template : Constlk and Template : X"))
    assert not unrendered(["template"])  # the word alone names nothing
    assert not unrendered(["the", "template", "letter"])  # a common word
    assert not unrendered(["template", "constlk", "oxford"])  # a value beside it


@given(st.text())
def test_a_stretch_without_the_word_template_is_never_unrendered(text):
    words = canonical_words(text)
    assert unrendered(words) <= ("template" in words)


@given(_WORDS, _WORDS, st.tuples(_WORDS, _WORDS, _WORDS, _WORDS))
def test_other_text_needs_words_on_both_sides(left, right, context):
    assert not other_text(left, right, context) or (left and right)


ORIGINAL = "The new bridge spans 12 km across the bay and opened to traffic in March 2019."
EDITED = ORIGINAL.replace("12 km", "15 km")
EDITED_LONGER = EDITED + " Tolls are collected at both ends of the span by the state."


def test_two_edits_agreeing_with_each_other_are_two_pairs_not_one_group(runtime):
    """Each edit disagrees with the original and not with the other edit: two groups
    through their shared partner, not one group claiming all three disagree."""
    cands = [
        candidate("e1", "d1", text=ORIGINAL, retrieval_score=0.9),
        candidate("e2", "d2", text=EDITED, retrieval_score=0.8),
        candidate("e3", "d3", text=EDITED_LONGER, retrieval_score=0.7),
    ]
    docs = Catalog([document("d1"), document("d2"), document("d3")])
    result = pack_request(
        request(*cands, question="How long is the new bridge?"),
        docs,
        PackingConfig(max_evidence_tokens=1000),
        runtime,
    )
    groups = [c.evidence_ids for c in result.manifest.conflicts]
    assert groups == [["e1", "e2"], ["e1", "e3"]]


def test_three_values_that_each_disagree_are_one_group(runtime):
    cands = [
        candidate("e1", "d1", text=ORIGINAL, retrieval_score=0.9),
        candidate("e2", "d2", text=EDITED, retrieval_score=0.8),
        candidate("e3", "d3", text=EDITED_LONGER.replace("15 km", "20 km"), retrieval_score=0.7),
    ]
    docs = Catalog([document("d1"), document("d2"), document("d3")])
    result = pack_request(
        request(*cands, question="How long is the new bridge?"),
        docs,
        PackingConfig(max_evidence_tokens=1000),
        runtime,
    )
    assert [c.evidence_ids for c in result.manifest.conflicts] == [["e1", "e2", "e3"]]


_IDS = st.sampled_from(["a", "b", "c", "d", "e", "f"])


@given(st.lists(st.tuples(_IDS, _IDS).filter(lambda p: p[0] != p[1]), max_size=12))
def test_conflict_groups_are_the_maximal_cliques_of_the_pairs(edges):
    pairs = {edge: {"copy"} for edge in edges}
    linked = {frozenset(edge) for edge in edges}
    groups, rules = conflict_groups(pairs)
    assert len(groups) == len(rules) and groups == sorted(groups)
    for group in groups:
        assert all(frozenset(p) in linked for p in combinations(group, 2))  # a clique
        assert not any(set(group) < set(other) for other in groups)  # maximal
    assert all(any(edge <= set(group) for group in groups) for edge in linked)  # all kept


POPULATION = (
    "According to the 2007 census, Moyale has a population of {}, of whom 13,665 are men. "
    "The largest ethnic group is the {} clan, around the town of Moyale."
)


@pytest.mark.parametrize(
    ("second", "flagged"),
    [
        (POPULATION.format("25,038", "Garre"), False),  # a name the question does not ask
        (POPULATION.format("31,200", "Borena"), True),  # the population asked
    ],
)
def test_asked_a_number_only_a_changed_number_disagrees(runtime, second, flagged):
    first = POPULATION.format("25,038", "Borena")
    found = _conflicts(runtime, first, second, "What is the population of Moyale?")
    assert found == ([(["e1", "e2"], ["copy"])] if flagged else [])


SQUADRON = (
    "Squadron history . No. 94 Squadron was formed at Castlereagh on 30 May 1945 . "
    "It was planned to equip the squadron with de Havilland Mosquito aircraft and {} "
    "it to No . 86 Wing . It was disbanded at Castlereagh in 1946 ."
)


@pytest.mark.parametrize(
    ("second", "flagged"),
    [
        (SQUADRON.format("assign"), False),  # the sentence bound cuts "No . 86": no negation
        (SQUADRON.format("not assign"), True),  # one negation, not two
    ],
)
def test_a_closing_no_before_a_number_is_no_negation(runtime, second, flagged):
    first = (
        "It was planned to equip the squadron with de Havilland Mosquito aircraft and "
        "assign it to No. 86 Wing."
    )
    found = _conflicts(runtime, first, second, dedup=DedupConfig(conflict_rules=("polarity",)))
    assert found == ([(["e1", "e2"], ["polarity"])] if flagged else [])


HILL = (
    "{} Jon Hill ({}1954) is an American {} who was White House Executive Chef from "
    "October 1, 1987, to January 7, 1988. He was the first American-born chef to serve in "
    "the capacity."
)


@pytest.mark.parametrize(
    ("second", "flagged"),
    [
        (HILL.format("Biography", "c. ", "chef"), False),  # `c.` beside a `(chef)` heading
        (HILL.format("Jon Hill (chef)", "", "boxer"), True),  # another profession
    ],
)
def test_a_swap_needs_a_word_on_both_sides(runtime, second, flagged):
    first = HILL.format("Jon Hill (chef)", "", "chef")
    found = _conflicts(runtime, first, second, "What is Jon Hill's profession?")
    assert found == ([(["e1", "e2"], ["copy"])] if flagged else [])
