"""Numbers real answers write in prose that are no figure of their own: sources named in
prose ("According to 1,"), and figures one text spells in words and the other in digits
("number one" / "number 1", "first" / "1st"), and a range's first day in its last day's year.
Each rule with the wrong-figure twin that
must still fail, and a fuzz test that the reading never crashes."""

from hypothesis import given
from hypothesis import strategies as st

from packer.verification.checks import GivenPacket, verify_answer
from packer.verification.figures import figure_facts, text_figures

TRADE = (
    "In 2019, China posted a trade surplus of USD 421.9 billion, the biggest since 2016, as "
    "exports increased 0.5 percent and imports fell 2.7 percent on weak domestic demand."
)


def _failed(answer: str, *blocks: str) -> list[str]:
    """The failed checks but names_supported (its own tests): made-up blocks need not name
    everything the answers do."""
    packet = GivenPacket("q", {f"E{i}": b for i, b in enumerate(blocks, 1)})
    return [c for c in verify_answer(answer, packet).failed if c != "names_supported"]


MENTIONS = [
    "According to {k}, ",
    "According to sources {k} and {j}, ",
    "As context {k} says, ",
    "Source {k} says that ",
    "Per documents {k}, {j} and 3, ",
    "As passage {k} notes (see {j}), ",
    "In search result {k}, ",
]


@given(st.sampled_from(MENTIONS), st.integers(1, 20), st.integers(1, 20))
def test_a_source_named_in_prose_is_no_figure(mention: str, k: int, j: int) -> None:
    lead = mention.format(k=k, j=j)
    answer = f"{lead}China posted a trade surplus of USD 421.9 billion in 2019 [E1]."
    assert _failed(answer, TRADE) == [], answer
    wrong = f"{lead}China posted a trade surplus of USD 521.9 billion in 2019 [E1]."
    assert _failed(wrong, TRADE) == ["figures_supported"], wrong


def test_mentions_of_sources_that_state_figures_are_still_figures() -> None:
    """A count, a year, a percentage or a code after the same words is a figure."""
    for answer, figure in [
        ("According to 12 experts, the surplus was large [E1].", "12"),
        ("According to 2019 data, the surplus was large [E1].", "2019"),
        ("The source of 40% of the surplus was exports [E1].", "40"),
        ("The documents 1.5 cm thick were filed [E1].", "1.5"),
    ]:
        assert figure in [f.text for f in figure_facts(answer)], answer
    assert _failed("This information is in both contexts 1 and 2 [E1].", TRADE) == []
    assert _failed("According to 12 experts, the surplus was USD 421.9 billion [E1].", TRADE) == [
        "figures_supported"
    ]


@given(st.text(max_size=80), st.text(max_size=80))
def test_reading_prose_numbers_never_crashes(head: str, tail: str) -> None:
    for text in (
        f"{head} according to 1, {tail}",
        f"{head} number one {tail} first {head} 2nd",
        f"{head} 23 February to {tail}6 March 2011 - {head}",
    ):
        text_figures(text)
        facts = figure_facts(text)
        assert all(f.text for f in facts)


HOTEL = (
    'Presley\'s first RCA single, "Heartbreak Hotel", was released in January 1956 and became '
    "a number one hit in the United States; it spent {weeks} weeks at the top."
)
ONES = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"]
SUFFIX = {1: "st", 2: "nd", 3: "rd"}


@given(st.integers(3, 10), st.sampled_from(["number 1", "Number 1", "number-1"]))
def test_a_rank_in_words_is_found_by_its_digits(weeks: int, rank: str) -> None:
    block = HOTEL.format(weeks=ONES[weeks - 1])
    answer = f"Heartbreak Hotel became a {rank} hit and spent {weeks} weeks at the top [E1]."
    assert _failed(answer, block) == [], answer
    assert _failed(answer.replace("1 hit", "2 hit"), block) == ["figures_supported"]
    assert _failed(answer.replace(f"{weeks} weeks", f"{weeks + 1} weeks"), block) == [
        "figures_supported"
    ]


@given(st.integers(1, 8), st.integers(1, 8))
def test_an_ordinal_in_words_is_found_by_its_digits(place: int, other: int) -> None:
    block = f"She finished the race in {ORDINALS[place - 1]} place, ahead of the champion."
    digits = f"{place}{SUFFIX.get(place, 'th')}"
    assert _failed(f"She finished {digits} in the race [E1].", block) == []
    if other != place:
        wrong = f"She finished {other}{SUFFIX.get(other, 'th')} in the race [E1]."
        assert _failed(wrong, block) == ["figures_supported"], (block, wrong)


def test_one_and_first_as_prose_find_no_digits() -> None:
    """ "one of", "the first time" state no rank: a changed 1 is still flagged."""
    block = "It was one of the first records to top the chart, after a long first week."
    assert _failed("It topped the chart for 1 week [E1].", block) == ["figures_supported"]
    assert _failed("It was one of the first records to top the chart [E1].", block) == []


MONTH_NAMES = ["January", "February", "March", "April", "May", "June", "July", "August"]
JOINS = [" to ", " until ", " through ", " – ", "-", " and "]


@given(
    st.integers(1, 28),
    st.integers(0, 6),
    st.integers(1, 28),
    st.integers(1990, 2030),
    st.sampled_from(JOINS),
)
def test_a_range_gives_its_first_day_its_year(
    day: int, month: int, end_day: int, year: int, join: str
) -> None:
    start, end = MONTH_NAMES[month], MONTH_NAMES[month + 1]
    block = (
        f"The FIS Nordic World Ski Championships took place from {day} {start}{join}"
        f"{end_day} {end} {year} in Oslo, Norway, at the Holmenkollen National Arena."
    )
    assert _failed(f"The championships began on {day} {start} {year} [E1].", block) == []
    assert _failed(f"The championships began on {start} {day}, {year} [E1].", block) == []
    assert _failed(f"The championships were held in {start} {year} [E1].", block) == []
    for wrong in (f"{day} {start} {year + 1}", f"{day % 28 + 1} {start} {year}"):
        assert _failed(f"The championships began on {wrong} [E1].", block) == [
            "figures_supported"
        ], wrong


def test_dates_apart_share_no_year() -> None:
    """Two dates with words between them are no range: the first keeps no year."""
    block = "Tickets went on sale on 23 February, and the final was played on 6 March 2011."
    assert _failed("Tickets went on sale on 23 February 2011 [E1].", block) == ["figures_supported"]
    assert _failed("Tickets went on sale on 23 February [E1].", block) == []


@given(st.integers(1, 10))
def test_digits_in_the_evidence_and_words_in_the_answer(n: int) -> None:
    """The other direction: an answer's words are no figures, its digits still are."""
    block = f"Heartbreak Hotel was a number {n} hit and won {n} awards."
    spelled = ONES[n - 1]
    assert _failed(f"It was a number {spelled} hit and won {spelled} awards [E1].", block) == []
    assert _failed(f"It was a number {spelled} hit and won {n + 10} awards [E1].", block) == [
        "figures_supported"
    ]
