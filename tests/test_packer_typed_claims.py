"""Typed claims (numbers with sign, scale and unit; dates with precision) and the slot rule."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packer import Catalog, PackerRuntime, pack_request
from packer.question import read_question
from packer.typed_claims import Date, Name, Quantity, claims_of
from schemas import DedupConfig, PackingConfig
from tests.factories import candidate, document, request

RUNTIME = PackerRuntime.load()
SLOT = PackingConfig(dedup=DedupConfig(conflict_rules=("copy", "slot", "name")))


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("Sales fell 5% last year.", [Quantity(5.0, "%")]),
        ("Sales fell -5 per cent.", [Quantity(-5.0, "%")]),
        ("It cost $3.5 million to build.", [Quantity(3_500_000.0, "$")]),
        ("It cost \u20ac3.5 million to build.", [Quantity(3_500_000.0, "\u20ac")]),
        ("The town has 4,000 people.", [Quantity(4000.0, "people")]),
        ("Temperatures reached minus 12 degrees.", [Quantity(-12.0, "degrees")]),
    ],
)
def test_numbers_carry_sign_scale_and_unit(text, numbers):
    [sentence] = claims_of(text)
    assert list(sentence.numbers) == numbers


@pytest.mark.parametrize(
    ("text", "dates"),
    [
        ("It opened on March 5, 2019.", [Date(2019, 3, 5)]),
        ("It opened on 5 March 2019.", [Date(2019, 3, 5)]),
        ("It opened in March 2019.", [Date(2019, 3, None)]),
        ("It was founded in 1856 by settlers.", [Date(1856, None, None)]),
        ("Visitors may enter at noon.", []),  # "may" is a modal, not a month
    ],
)
def test_dates_carry_their_precision(text, dates):
    [sentence] = claims_of(text)
    assert list(sentence.dates) == dates
    assert not sentence.numbers


def test_dates_are_compatible_to_their_precision():
    assert Date(2019, 3, None).compatible(Date(2019, 3, 5))
    assert Date(2019, None, None).compatible(Date(2019, 7, 1))
    assert not Date(2019, 3, None).compatible(Date(2019, 6, None))
    assert not Date(2019, 3, 5).compatible(Date(2020, 3, 5))


@pytest.mark.parametrize(
    ("question", "slot"),
    [
        ("How many people live in Springfield?", "number"),
        ("What is the population of Broken Bow?", "number"),
        ("When was the Springfield library opened?", "date"),
        ("what year did the war end", "date"),
        ("Who founded Springfield?", "name"),
        ("where does the shenandoah river begin", "name"),
        ("Which is older, Springfield or Shelbyville?", None),
        ("Why is the sky blue?", None),
    ],
)
def test_the_question_names_its_slot(question, slot):
    assert read_question(question).slot == slot


def _pack(question, *texts, documents=None, config=SLOT):
    docs = [document(f"d{i}") for i in range(len(texts))]
    cands = [
        candidate(f"e{i}", (documents or [f"d{i}" for i in range(len(texts))])[i], text=t)
        for i, t in enumerate(texts)
    ]
    return pack_request(request(*cands, question=question), Catalog(docs), config, RUNTIME)


POPULATION = "How many people live in Springfield?"


def test_two_documents_answering_the_number_slot_differently_are_flagged():
    result = _pack(
        POPULATION,
        "Springfield is a town in Oregon. Springfield has 12,000 people living there.",
        "According to the census, Springfield counts 15,000 people today.",
    )
    [conflict] = result.manifest.conflicts
    assert (conflict.evidence_ids, conflict.rules) == (["e0", "e1"], ["number"])
    # the default rules do not include the slot rule
    default = _pack(
        POPULATION,
        "Springfield is a town in Oregon. Springfield has 12,000 people living there.",
        "According to the census, Springfield counts 15,000 people today.",
        config=PackingConfig(),
    )
    assert default.manifest.conflicts == []


@pytest.mark.parametrize(
    "other",
    [
        # the other value stated too: an update, not a contradiction
        "Springfield has 15,000 people, up from 12,000 people a decade ago.",
        # the same value, written otherwise
        "Springfield has 12 thousand people living there.",
        # another unit: not the same quantity
        "Springfield covers 15,000 acres of land.",
        # another entity
        "Shelbyville has 15,000 people living there.",
    ],
)
def test_no_flag_when_the_values_agree_or_are_not_about_the_slot(other):
    only = PackingConfig(dedup=DedupConfig(conflict_rules=("slot",)))
    result = _pack(POPULATION, "Springfield has 12,000 people living there.", other, config=only)
    assert result.manifest.conflicts == []


def test_one_document_never_conflicts_with_itself():
    result = _pack(
        POPULATION,
        "Springfield has 12,000 people living there.",
        "Springfield has 15,000 people living there.",
        documents=["d0", "d0"],
    )
    assert result.manifest.conflicts == []


OPENED = "When was the Springfield library opened?"


def test_dates_conflict_only_when_incompatible():
    base = "The Springfield library was opened on 5 March 2019."
    compatible = _pack(OPENED, base, "The Springfield library opened in March 2019.")
    assert compatible.manifest.conflicts == []
    other = _pack(OPENED, base, "The Springfield library opened in June 2021.")
    assert [c.rules for c in other.manifest.conflicts] == [["date"]]


SCALE_WORDS = {"": 1.0, " thousand": 1e3, " million": 1e6, " billion": 1e9}


@given(
    whole=st.integers(0, 999_999_999),
    decimals=st.sampled_from(["", ".5", ".25", ".05"]),
    sign=st.sampled_from([("", 1), ("-", -1), ("\u2212", -1), ("+", 1), ("minus ", -1)]),
    scale=st.sampled_from(sorted(SCALE_WORDS)),
    unit=st.sampled_from([("people", "people"), ("%", "%"), ("per cent", "%"), ("km", "km")]),
    grouped=st.booleans(),
)
def test_a_written_number_is_read_with_its_sign_scale_and_unit(
    whole, decimals, sign, scale, unit, grouped
):
    """Thousands separators, decimals, every sign form, scale words and units, as
    written in a sentence: the claim holds the number they state."""
    digits = f"{whole:,}" if grouped else str(whole)
    text = f"The count was {sign[0]}{digits}{decimals}{scale} {unit[0]} last year."
    [sentence] = claims_of(text)
    expected = sign[1] * float(f"{whole}{decimals}") * SCALE_WORDS[scale]
    assert list(sentence.numbers) == [Quantity(expected, unit[1])]
    assert sentence.dates == ()


def test_names_are_runs_of_capitalized_words_past_the_sentence_start():
    [first, second] = claims_of(
        "The theme of Only Fools and Horses was sung by John Sullivan in London. "
        "Heather Ball sang it."
    )
    assert [n.words for n in first.named] == [("only", "fools"), ("horses",),
                                              ("john", "sullivan"), ("london",)]  # fmt: skip
    assert [n.words for n in second.named] == [("heather", "ball")]  # two words at the start
    assert claims_of("Nobody sang it. Sullivan did.")[1].named == ()  # one word at the start


FOUNDED = "Who founded the Springfield library?"


def test_two_documents_naming_different_founders_are_flagged():
    texts = (
        "The Springfield library was founded by Jebediah Springer in the old town.",
        "Records show the Springfield library was founded by Mary Lincoln, a teacher.",
    )
    result = _pack(FOUNDED, *texts)
    assert [(c.evidence_ids, c.rules) for c in result.manifest.conflicts] == [
        (["e0", "e1"], ["name"])
    ]
    # names are a rule of their own: `slot` compares numbers and dates only
    numbers_and_dates = PackingConfig(dedup=DedupConfig(conflict_rules=("copy", "slot")))
    assert _pack(FOUNDED, *texts, config=numbers_and_dates).manifest.conflicts == []


@pytest.mark.parametrize(
    "other",
    [
        # the same founder, by surname only
        "Records show the Springfield library was founded by Springer, a farmer.",
        # the other name written in the passage too: not a contradiction
        "The Springfield library was founded by Mary Lincoln after Jebediah left.",
        # another entity: a library of another town
        "The Shelbyville library was founded by Mary Lincoln, a teacher.",
    ],
)
def test_no_name_flag_when_names_agree_or_are_not_about_the_slot(other):
    only = PackingConfig(dedup=DedupConfig(conflict_rules=("name",)))
    base = "The Springfield library was founded by Jebediah Springer in the old town."
    assert _pack(FOUNDED, base, other, config=only).manifest.conflicts == []


def test_a_passage_naming_its_own_subject_gives_no_answer():
    """The title's words are the passage's subject, not an answer to "who"."""
    docs = [document("d0"), document("d1")]
    cands = [
        candidate("e0", "d0", title="Springfield library",
                  text="The Springfield library was founded by Jebediah Springer."),
        candidate("e1", "d1", title="Mary Lincoln",
                  text="Mary Lincoln worked at the Springfield library as founded by Lincoln."),
    ]  # fmt: skip
    result = pack_request(request(*cands, question=FOUNDED), Catalog(docs), SLOT, RUNTIME)
    assert result.manifest.conflicts == []
    assert Name(("mary", "lincoln")) in claims_of(cands[1].text)[0].named


FOUNDERS = ["Jebediah Springer", "Mary Lincoln", "Ada Byron", "Otto Kruger", "Wu Chen"]
SLOT_TEXTS = {
    POPULATION: lambda v: f"Springfield has {v},000 people living there.",
    FOUNDED: lambda v: (
        f"The Springfield library was founded by {FOUNDERS[v % len(FOUNDERS)]} in the town."
    ),
}


@given(
    question=st.sampled_from(sorted(SLOT_TEXTS)),
    values=st.lists(st.integers(1, 40), min_size=2, max_size=8),
    order=st.randoms(use_true_random=False),
)
def test_slot_conflicts_link_exactly_the_documents_with_different_values(question, values, order):
    """Bucketing by value loses no pair, for numbers and names: two documents are in
    one conflict group exactly when some chain of different answers links them,
    whatever the order."""
    if question == FOUNDED:
        values = [v % len(FOUNDERS) for v in values]
    texts = [SLOT_TEXTS[question](v) for v in values]
    indices = list(range(len(texts)))
    order.shuffle(indices)
    docs = [document(f"d{i}") for i in indices]
    cands = [candidate(f"e{i}", f"d{i}", text=texts[i]) for i in indices]
    result = pack_request(request(*cands, question=question), Catalog(docs), SLOT, RUNTIME)
    distinct = set(values)
    grouped = {e for c in result.manifest.conflicts for e in c.evidence_ids}
    if len(distinct) > 1:
        # exact duplicates fold first: the keepers of every distinct value form one group
        assert len(result.manifest.conflicts) == 1
        assert len(grouped) == len(distinct)
    else:
        assert grouped == set()
