"""The source read as it is written: tokenized punctuation, lower-case months, spaced
ranges, spaced thousands, numbers inside names and codes, quotations as people quote,
and an answer wrapped whole in quotes. Each reading rule with its wrong-figure twin,
which must still fail."""

import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from packer.verification.as_written import as_written
from packer.verification.checks import GivenPacket, verify_answer


def _failed(answer: str, *blocks: str, scope: str = "citation") -> list[str]:
    packet = GivenPacket("q", {f"E{i}": b for i, b in enumerate(blocks, 1)})
    failed = verify_answer(answer, packet, scope=scope).failed
    return [c for c in failed if c != "names_supported"]  # test_verify_names.py's


TOKENIZED = (
    "The band 's third album , `` Night Trains '' , was released on October 3 , 2013 "
    "by Harbour Records ( a label founded in 1998 ) . It sold 45 % more copies than its "
    "predecessor during the 2012 -- 13 season ."
)


@pytest.mark.parametrize(
    ("answer", "wrong"),
    [
        (
            "Night Trains was released on October 3, 2013 [E1].",
            "Night Trains was released on October 4, 2013 [E1].",
        ),
        ("It came out on 3 October 2013 [E1].", "It came out on 3 October 2012 [E1]."),
        ("Harbour Records was founded in 1998 [E1].", "Harbour Records was founded in 1989 [E1]."),
        ("It sold 45% more copies [E1].", "It sold 54% more copies [E1]."),
        ("That was the 2012-13 season [E1].", "That was the 2012-14 season [E1]."),
        ("That was the 2012–2013 season [E1].", "That was the 2012–2014 season [E1]."),
    ],
)
def test_tokenized_text_holds_its_figures_and_dates(answer: str, wrong: str) -> None:
    assert _failed(answer, TOKENIZED) == []
    assert _failed(wrong, TOKENIZED) == ["figures_supported"]


def test_tokenized_answers_read_as_the_evidence() -> None:
    """The same reading on the answer side: an answer copied from tokenized text passes."""
    prose = "Night Trains came out on October 3, 2013 and sold 45% more copies."
    assert _failed("It came out on October 3 , 2013 [E1] .", prose) == []
    assert _failed("It came out on October 3 , 2014 [E1] .", prose) == ["figures_supported"]


@pytest.mark.parametrize("month", ["may", "MAY", "May"])
def test_month_names_in_any_case(month: str) -> None:
    block = f"the harbour festival closed on {month} 30 after 12 days ; 30 {month} was a sunday"
    assert _failed("The festival closed on May 30 [E1].", block) == []
    assert _failed("The festival closed on 30 May [E1].", block) == []
    assert _failed("The festival closed on May 31 [E1].", block) == ["figures_supported"]
    assert _failed("The festival closed on June 30 [E1].", block) == ["figures_supported"]


def test_may_the_verb_is_no_month() -> None:
    """ "may" is a month only beside a number: "they may" stays a verb."""
    assert as_written("they may visit twice") == "they may visit twice"
    assert as_written("on march 4") == "on March 4"
    assert _failed("Visitors may stay 3 nights [E1].", "Guests may stay 3 nights.") == []
    assert _failed("Visitors may stay 4 nights [E1].", "Guests may stay 3 nights.") == [
        "figures_supported"
    ]


@pytest.mark.parametrize("dash", [" -- ", "--", " - ", " – ", "–", "-", " — "])
def test_ranges_with_any_dash(dash: str) -> None:
    block = f"Unemployment rose during the 2007{dash}08 crisis and again in 2009{dash}2011."
    assert _failed("It rose in the 2007–08 crisis [E1].", block) == []
    assert _failed("It rose in the 2007-2008 crisis [E1].", block) == []
    assert _failed("It rose again in 2009-11 [E1].", block) == []
    assert _failed("It rose in the 2007–10 crisis [E1].", block) == ["figures_supported"]
    assert _failed("It rose again in 2009-12 [E1].", block) == ["figures_supported"]


@pytest.mark.parametrize("space", ["\u2009", "\u202f", "\u00a0", " "])
def test_thousands_with_thin_or_plain_spaces(space: str) -> None:
    block = f"The reservoir holds 12{space}500{space}000 litres."
    assert _failed("It holds 12,500,000 litres [E1].", block) == []
    assert _failed("It holds 12.5 million litres [E1].", block) == []
    assert _failed("It holds 12,600,000 litres [E1].", block) == ["figures_supported"]


def test_spaced_punctuation_never_joins_digits() -> None:
    """ "3 , 500" is two numbers however it is spaced: reading the source as written must
    not make 3,500 appear."""
    block = "Groups of 3 , 500 visitors each ."
    assert _failed("There were 500 visitors per group [E1].", block) == []
    assert _failed("There were 3,500 visitors [E1].", block) == ["figures_supported"]


digits = st.text(st.sampled_from("0123456789 ,.-`'%()[]\u2009ab"), max_size=40)


@given(digits)
def test_as_written_keeps_every_digit_run_and_is_idempotent(text: str) -> None:
    once = as_written(text)
    assert as_written(once) == once
    runs = re.findall(r"\d+", text)
    assert re.findall(r"\d+", once) == runs


@given(st.text(max_size=80))
def test_as_written_reads_any_text(text: str) -> None:
    as_written(text)
    _failed(f"It says {text} [E1].", text)


CODES = (
    "COVID-19 reached the region in March 2020. Most offices ran Windows 10, and under "
    "Rule 19 of the code each Boeing 737 was inspected. The tanks held H2O and 40 tonnes "
    "of salt."
)


@pytest.mark.parametrize(
    ("answer", "wrong"),
    [
        ("COVID-19 reached it in 2020 [E1].", "COVID-19 reached it in 2021 [E1]."),
        ("Offices ran Windows 10 [E1].", "Offices ran Windows 11 [E1]."),
        ("Under Rule 19, every Boeing 737 was inspected [E1].", "Under Rule 21 inspections [E1]."),
        ("Each Boeing 737 was inspected [E1].", "Each Boeing 747 was inspected [E1]."),
        ("The tanks held H2O and 40 tonnes of salt [E1].", "The tanks held 45 tonnes [E1]."),
    ],
)
def test_numbers_in_names_and_codes_are_words(answer: str, wrong: str) -> None:
    assert _failed(answer, CODES) == []
    assert _failed(wrong, CODES) == ["figures_supported"]


def test_a_name_the_evidence_writes_without_its_number() -> None:
    """The evidence names Windows but never its version: the name passes; a number after a
    capitalised word the evidence never writes is a figure (German capitalises nouns)."""
    block = "The update reached every Windows machine, 40 in all."
    assert _failed("It reached each Windows 10 machine [E1].", block) == []
    assert _failed("Insgesamt waren es 40 Rechner [E1].", block) == []
    assert _failed("Insgesamt betrug die Zahl 41 [E1].", block) == ["figures_supported"]
    assert _failed("Insgesamt betrug die Zahl 40 [E1].", block) == []


SPEECH = (
    "In her speech the mayor said: “The new bridge will open in the spring, and it will "
    "carry 40,000 cars a day. It is, quite simply, the city's biggest project.”"
)


@pytest.mark.parametrize(
    ("answer", "wrong"),
    [
        (
            'The mayor said "the new bridge will open in the spring" [E1].',
            'The mayor said "the new bridge will open in the summer" [E1].',
        ),
        (
            'She called it "quite simply the city\'s biggest project" [E1].',
            'She called it "quite simply the city\'s second project" [E1].',
        ),
        (
            'She said "The new bridge will open ... and it will carry 40,000 cars a day" [E1].',
            'She said "The new bridge will open ... and it will carry 50,000 cars a day" [E1].',
        ),
        (
            'She said "new bridge will open in spring" [E1].',
            'She said "new bridge will not open in spring" [E1].',
        ),
        (
            "She said “IT IS, QUITE SIMPLY, THE CITY'S BIGGEST PROJECT” [E1].",
            "She said “IT IS, QUITE SIMPLY, THE REGION'S BIGGEST PROJECT” [E1].",
        ),
    ],
)
def test_quotations_as_people_quote(answer: str, wrong: str) -> None:
    assert _failed(answer, SPEECH) == []
    assert _failed(wrong, SPEECH) == ["figures_supported"]


def test_an_ellipsis_keeps_the_order() -> None:
    """The pieces an ellipsis leaves must come in the source's order."""
    quote = 'She said "it will carry 40,000 cars a day ... new bridge will open" [E1].'
    assert _failed(quote, SPEECH) == ["figures_supported"]


SUMMARY_BLOCK = (
    "The Harbour Bridge opened on 12 May 1998. Its main span, called “the Needle”, is "
    "410 metres long."
)


@pytest.mark.parametrize("marks", [('"', '"'), ("“", "”")])
def test_an_answer_wrapped_in_quotes_is_prose(marks: tuple[str, str]) -> None:
    """A summary wrapped whole in quotation marks is checked as prose, its figures too."""
    left, right = marks
    body = "The bridge opened on 12 May 1998, and its main span, called “the Needle”, is"
    assert _failed(f"{left}{body} 410 metres long.{right} [E1]", SUMMARY_BLOCK) == []
    assert _failed(f"{left}{body} 420 metres long.{right} [E1]", SUMMARY_BLOCK) == [
        "figures_supported"
    ]
    assert _failed(f"{left}{body} 410 metres long.{right}", SUMMARY_BLOCK, scope="packet") == []


def test_two_quotations_are_not_one_wrapped_answer() -> None:
    block = 'Critics called the span "elegant" and the towers "too tall to be pretty".'
    both = 'The span is "elegant" and the towers "too tall to be pretty" [E1].'
    assert _failed(both, block) == []
    wrong = '"Elegant" and "far too tall to be very pretty", said critics [E1].'
    assert _failed(wrong, block) == ["figures_supported"]


@given(st.integers(1, 9_999), st.integers(1, 9_999))
def test_a_quotation_with_a_changed_figure_fails(n: int, m: int) -> None:
    assume(n != m)
    block = f"The council said that rents rose by {n} pounds over the year."
    assert _failed(f'It said "rents rose by {n} pounds over the year" [E1].', block) == []
    assert _failed(f'It said "rents rose by {m} pounds over the year" [E1].', block) == [
        "figures_supported"
    ]


def test_spaced_hyphens_join_words_but_never_a_word_to_a_figure() -> None:
    """ "10 - million - per - year" is "10-million-per-year"; a spaced dash before a
    number is punctuation, so the number is no name-number ("total-45") and still a figure."""
    block = "Saban was eyeing a $ 10 - million - per - year deal ."
    assert _failed("He was offered $10 million a year [E1].", block) == []
    assert _failed("He was offered $12 million a year [E1].", block) == ["figures_supported"]
    assert _failed("The deal - 45 pages - was signed [E1].", block) == ["figures_supported"]


def test_a_lower_case_word_before_a_hyphen_names_nothing() -> None:
    """ "mid-1980s", "top-10": quantities, so a changed one fails; "COVID-19" is a code."""
    block = "The band peaked in the mid-1980s with a top-10 single."
    assert _failed("It peaked in the mid-1980s with a top-10 hit [E1].", block) == []
    assert _failed("It peaked in the mid-1970s [E1].", block) == ["figures_supported"]
    assert _failed("It had a top-20 hit [E1].", block) == ["figures_supported"]
    assert _failed("Its tour was cut short by COVID-19 [E1].", block) == []


CATALOGUE = (
    "The Lagos harbour museum opened on 22 October 1998 and holds 4,000 maps. Its online "
    "catalogue was last revised on 9 May 2021."
)


@pytest.mark.parametrize(
    ("answer", "wrong"),
    [
        (
            "Harbour museum catalogue. [Online]. [Accessed: 9-May-2021] [E1].",
            "Harbour museum catalogue. [Online]. [Accessed: 9-May-2022] [E1].",
        ),
        (
            "Harbour museum catalogue [Accessed May 9, 2021] [E1].",
            "Harbour museum catalogue [Accessed May 20, 2021] [E1].",
        ),
        (
            "The museum [opened 22-Oct-1998] holds maps [E1].",
            "The museum [opened 23-Oct-1998] holds maps [E1].",
        ),
        (
            "The museum holds maps [4,000 of them] [E1].",
            "The museum holds maps [5,000 of them] [E1].",
        ),
    ],
)
def test_brackets_that_say_something_are_read(answer: str, wrong: str) -> None:
    """A bracket holding no citation is the sentence's text: a date or figure in it is
    checked, day-month-year with hyphens included."""
    assert _failed(answer, CATALOGUE) == []
    assert _failed(wrong, CATALOGUE) == ["figures_supported"]
    assert _failed(wrong, CATALOGUE, scope="packet") == ["figures_supported"]


@given(st.integers(1, 400), st.integers(1, 999), st.sampled_from(["", "Source ", "note ", "E"]))
def test_source_marks_are_never_figures(label: int, mark: int, word: str) -> None:
    """Footnote marks copied from a source ("[9]", "[Source 2]", "[1, 4]") are no figures."""
    answer = f"The museum holds 4,000 maps [E1] [{word}{mark}] [{mark}, {label}] [{word}{label}]."
    assert "figures_supported" not in _failed(answer, CATALOGUE)
