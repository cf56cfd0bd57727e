"""How answers are read: dates, scales, scripts, sentences, citation forms, abstentions."""

from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from packer.verification.answer_sentences import MAX_RANGE, cited_labels, split_sentences
from packer.verification.checks import GivenPacket, verify_answer
from packer.verification.claims import sentence_facts


def _failed(answer: str, *blocks: str, uncovered: tuple[str, ...] = ()) -> list[str]:
    packet = GivenPacket(
        request_id="q",
        blocks={f"E{i}": b for i, b in enumerate(blocks, 1)},
        uncovered=uncovered,
    )
    return [c for c in verify_answer(answer, packet).failed if c != "names_supported"]


NUMERIC = {
    "mdy": lambda d: f"{d.month}/{d.day}/{d.year}",
    "dmy": lambda d: f"{d.day}/{d.month}/{d.year}",
    "dotted": lambda d: f"{d.day:02d}.{d.month:02d}.{d.year}",
    "short_year": lambda d: f"{d.month}/{d.day}/{d.year % 100:02d}",
    "iso_slashes": lambda d: f"{d.year}/{d.month:02d}/{d.day:02d}",
}
days = st.dates(min_value=date(1930, 1, 1), max_value=date(2029, 12, 30))


@given(days, st.sampled_from(sorted(NUMERIC)))
def test_a_numeric_date_is_supported_in_any_order(day: date, form: str) -> None:
    block = f"It happened on {day.strftime('%d %B %Y')}."
    assert _failed(f"It happened on {NUMERIC[form](day)} [E1].", block) == []


@given(days, st.sampled_from(sorted(NUMERIC)), st.integers(min_value=1, max_value=40))
def test_a_shifted_numeric_date_is_flagged_unless_a_reading_matches(
    day: date, form: str, shift: int
) -> None:
    later = day + timedelta(days=shift)
    swapped = {(later.day, later.month), (later.month, later.day)}
    assume((day.month, day.day) not in swapped or day.year != later.year)
    block = f"It happened on {day.strftime('%d %B %Y')}."
    assert _failed(f"It happened on {NUMERIC[form](later)} [E1].", block) == ["figures_supported"]


def test_an_ambiguous_date_is_read_in_the_order_the_evidence_uses() -> None:
    dmy = "Filed 25/12/2020; heard 03/04/2021."
    assert _failed("It was heard on 3/4/2021 [E1].", dmy) == []
    assert _failed("It was heard on 4/3/2021 [E1].", dmy) == ["figures_supported"]
    words = "Heard on 3 April 2021."  # no numeric order in the evidence: both readings
    assert _failed("It was heard on 4/3/2021 [E1].", words) == []
    assert _failed("It was heard on 3/4/2021 [E1].", words) == []


@pytest.mark.parametrize(
    "written",
    ["Dec. 12, 2019", "12th of December 2019", "12. Dezember 2019", "12. December 2019",
     "Dec 12th, 2019", "2019-12-12", "12/12/2019", "12.12.2019", "2019年12月12日",
     "2019년 12월 12일"],
)  # fmt: skip
def test_date_spellings(written: str) -> None:
    assert _failed(f"The deal closed on {written} [E1].", "It closed on December 12, 2019.") == []


@pytest.mark.parametrize(
    ("answer", "block", "supported"),
    [
        ("3.5M", "3.5 million", True),
        ("3.5 mn", "3,500,000", True),
        ("$2B", "2 billion dollars", True),
        ("1k", "1,000", True),
        ("1K", "1000", True),
        ("3.5bn", "3.5 million", False),
        ("3.5 billion", "3.5 million", False),
        ("$5m", "$5 million", True),
        ("100m", "a 100m sprint", True),
        ("45%", "45 percent", True),
        ("0.45", "45 percent", False),
        ("45%", "a share of 0.45", False),
        ("2.5万", "25,000", True),
    ],
)
def test_scales_and_percentages(answer: str, block: str, supported: bool) -> None:
    failed = _failed(f"The figure is {answer} [E1].", f"The figure is {block}.")
    assert failed == ([] if supported else ["figures_supported"])


def test_numbers_beside_any_script_are_read_but_not_inside_latin_words() -> None:
    assert _failed("数字是24[E1]。", "数字是24。") == []
    assert _failed("数字是25[E1]。", "数字是24。") == ["figures_supported"]
    assert _failed("Число 25 [E1].", "Число 24.") == ["figures_supported"]
    assert [f.key for f in sentence_facts("An A320 and COVID19 in 2020.")] == ["2020"]


@pytest.mark.parametrize(
    "answer",
    [
        "It was founded on Dec. 12, 2019 [E1].",
        "The U.S. Army and Dr. Smith met in 2019, e.g. No. Five [E1].",
        "He said “Dr. Smith left in 2019” [E1].",
        "Smith (cf. ‘Mr. Jones’) left in 2019 [E1].",
        "It was on the 12. December 2019 [E1].",
        "J. R. R. Tolkien left in 2019 [E1].",
        "Rs. 500 were paid in 2019 [E1].",
        "Prices (approx. Fig. A) rose in 2019 [E1].",
    ],
)
def test_abbreviations_do_not_end_a_sentence(answer: str) -> None:
    block = 'On 12 December 2019 "Dr. Smith left in 2019"; Rs. 500 were paid, 2019.'
    assert split_sentences(answer) == [answer]
    assert "factual_sentences_cited" not in _failed(answer, block)


def test_sentence_ends_in_other_scripts_and_lists() -> None:
    assert split_sentences("数字是24[E1]。他走了。") == ["数字是24[E1]。", "他走了。"]
    assert split_sentences("数字是24。[E1] Next.") == ["数字是24[E1]。", "Next."]
    assert split_sentences("Items:\n- one [E1]\n- two [E2]") == [
        "Items:",
        "- one [E1]",
        "- two [E2]",
    ]


@given(st.integers(min_value=1, max_value=60), st.integers(min_value=1, max_value=60))
def test_a_range_is_each_label_or_one_unknown_label(first: int, last: int) -> None:
    labels = cited_labels(f"It is so [E{first}-E{last}].")
    if first <= last < first + MAX_RANGE:
        assert labels == tuple(f"E{i}" for i in range(first, last + 1))
    else:
        assert labels == (f"E{first}-E{last}",)


def test_range_citations_are_checked_label_by_label() -> None:
    blocks = ("It opened in 2014.", "It has 40 staff.", "It is in Delft.")
    assert _failed("It opened in 2014 with 40 staff [E1-E3].", *blocks) == []
    for wrong in ("[E1-E400]", "[E3-E1]", "[E2-E4]"):
        assert "labels_exist" in _failed(f"It opened in 2014 {wrong}.", *blocks)
    assert _failed("It opened in 2014 [E1; E2 and E3].", *blocks) == []
    assert cited_labels("See [2], [source 2], [e2] and E2.") == ()


def test_empty_and_citation_less_answers_fail() -> None:
    block = "It opened in 2014."
    assert _failed("", block) == ["answered"]
    assert _failed(" \n ", block) == ["answered"]
    assert _failed("It is a fine place.", block) == ["cites_evidence"]
    assert _failed("It opened in 2014.", block) == ["cites_evidence", "factual_sentences_cited"]
    assert _failed("I'm sorry. The documents do not say when it opened.", block) == []
    assert _failed("It is big. It is old. The sources do not say more.", block) == [
        "cites_evidence"
    ]


NOT_COVERED = [
    "I could not find anything about {x}.",
    "The documents are silent on {x}.",
    "There is no information about {x} in the sources.",
    "None of the sources mention {x}.",
    "The evidence does not address {x}.",
    "{x} is not covered by the documents.",
    "I was unable to find {x} in the provided documents.",
    "The sources say nothing about {x}.",
    "There's no mention of {x} in the evidence.",
    "The provided context lacks information on {x}.",
    "{x}: not stated in the sources.",
    "Regarding {x}, the documents provide no details.",
    "I couldn't find any details on {x}.",
    "The passages don't say anything about {x}.",
    "{x} isn't mentioned anywhere.",
    "{x} is unknown.",
    "Nothing is said about {x}.",
    "{x} is beyond the scope of the documents.",
    "It is not possible to determine {x} from the documents.",
    "There are no records of {x}.",
    "I do not have enough information about {x}.",
    "{x}: N/A.",
]


@pytest.mark.parametrize("phrase", NOT_COVERED)
def test_ways_of_saying_a_facet_is_not_covered(phrase: str) -> None:
    answer = "It opened in 2014 [E1]. " + phrase.format(x="return shipping")
    assert _failed(answer, "It opened in 2014.", uncovered=("return shipping",)) == []
    assert _failed(phrase.format(x="the opening date"), "It opened in 2014.") == []


def test_a_claim_about_an_uncovered_facet_is_not_a_declaration() -> None:
    answer = "It opened in 2014 [E1]. Return shipping is free for members [E1]."
    failed = _failed(answer, "It opened in 2014.", uncovered=("return shipping",))
    assert failed == ["uncovered_facets_declared"]


def test_an_ordinal_day_glued_to_a_bracket_does_not_end_a_sentence() -> None:
    answer = "Harry Prowell A.A.(10. Juli 1936 – 27 June 2000) was a runner [E1]."
    assert split_sentences(answer) == [answer]
    assert split_sentences("The battle (1–26. Juni 1918) was won [E1].") == [
        "The battle (1–26. Juni 1918) was won [E1]."
    ]
    assert len(split_sentences("It ended in 2019. Juni came.")) == 2  # a year is no ordinal


@pytest.mark.parametrize(
    "claim",
    [
        "She has nothing to hide in her new relationship.",
        "There is nothing wrong with the engine.",
        "The bridge was not built until 1990.",
    ],
)
def test_claims_with_negations_are_not_abstentions(claim: str) -> None:
    assert _failed(claim, "She spoke in 1990.") == ["cites_evidence"] + (
        ["factual_sentences_cited"] if "1990" in claim else []
    )


@pytest.mark.parametrize(
    ("answer", "block"),
    [
        ("4 staff", "four staff"),
        ("21 days", "twenty-one days"),
        ("3rd album", "third album"),
        ("2M people", "two million people"),
        ("500 cars", "five hundred cars"),
    ],
)
def test_digits_for_numbers_the_evidence_spells_out(answer: str, block: str) -> None:
    assert _failed(f"It had {answer} [E1].", f"It had {block}.") == []
    assert _failed(f"It had 9{answer[1:]} [E1].", f"It had {block}.") == ["figures_supported"]


@pytest.mark.parametrize(
    ("answer", "block", "supported"),
    [
        ("4.000 Mitarbeiter", "4,000 staff", True),
        ("1 000 000 visitors", "1,000,000 visitors", True),
        ("4'000 francs", "4000 francs", True),
        ("3,5 Millionen", "3.5 million", True),
        ("1.234.567,89 euros", "1,234,567.89 euros", True),
        ("4.000 staff", "4 staff", True),  # a decimal point after all
        ("5 100 people", "5 buses and 100 people", True),
        ("4.500 staff", "4,000 staff", False),
        ("3,6 Millionen", "3.5 million", False),
        ("1 000 001 visitors", "1,000,000 visitors", False),
    ],
)
def test_other_digit_group_and_decimal_conventions(
    answer: str, block: str, supported: bool
) -> None:
    failed = _failed(f"There were {answer} [E1].", f"There were {block}.")
    assert failed == ([] if supported else ["figures_supported"])


@pytest.mark.parametrize(
    ("answer", "block", "supported"),
    [
        ("$3.5 million", "$3,512,000", True),
        ("$3.5 million", "$3,450,000", True),
        ("$3.5 million", "$3,550,000", False),  # rounds to 3.6
        ("$3.6 million", "$3,512,000", False),
        ("1.2k staff", "1,234 staff", True),
        ("3.5bn", "3,512,000", False),
        ("1,235 staff", "1,234 staff", False),  # unscaled: every digit is a claim
    ],
)
def test_a_scaled_figure_stands_for_the_values_it_rounds_from(
    answer: str, block: str, supported: bool
) -> None:
    failed = _failed(f"It was {answer} [E1].", f"It was {block}.")
    assert failed == ([] if supported else ["figures_supported"])


@given(st.integers(min_value=1_000, max_value=10**12), st.sampled_from(["k", "M", "bn"]))
def test_a_rounded_figure_is_supported_and_one_more_unit_is_not(value: int, suffix: str) -> None:
    scale = {"k": 10**3, "M": 10**6, "bn": 10**9}[suffix]
    assume(value >= scale)
    tenths = (Decimal(value) * 10 / scale).quantize(Decimal(1), rounding=ROUND_HALF_UP)
    written = f"{tenths / 10:.1f}{suffix}"
    assert _failed(f"It was {written} [E1].", f"It was {value:,}.") == [], written
    wrong = f"{(tenths + 1) / 10:.1f}{suffix}"
    assert _failed(f"It was {wrong} [E1].", f"It was {value:,}.") == ["figures_supported"]


PIECES = [*"0123456789.,/-:'\" []()E%$kMmB万。\n", "٣", "๓", "２", "Dec", "U.S.", "7. ",
          "Juli", "N/A", " million", "\u00a0", "[E1-E3]", "1/2/20",
          "the sources do not say"]  # fmt: skip
answer_text = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@given(answer_text, answer_text)
def test_any_answer_against_any_block_gives_a_verdict(answer: str, block: str) -> None:
    """Digits of any script, broken dates, ranges and scales: a verdict, never an exception."""
    verdict = verify_answer(answer, GivenPacket(request_id="q", blocks={"E1": block, "E2": answer}))
    assert [c.name for c in verdict.checks][:3] == ["answered", "labels_exist", "cites_evidence"]


@given(answer_text)
def test_splitting_keeps_every_character(answer: str) -> None:
    """Sentences may reorder a trailing citation before its full stop, never drop text."""
    kept = "".join(split_sentences(answer))
    assert sorted(kept.replace(" ", "").replace("\n", "").replace("\u00a0", "")) == sorted(
        answer.replace(" ", "").replace("\n", "").replace("\u00a0", "")
    )


def test_cjk_dates_are_dates() -> None:
    block = "It closed on December 12, 2019."
    assert _failed("它于2019年12月12日关闭[E1]。", block) == []
    assert _failed("它于2019年12月13日关闭[E1]。", block) == ["figures_supported"]
    assert _failed("它在12月关闭[E1]。", block) == []  # a month alone: nothing to check
