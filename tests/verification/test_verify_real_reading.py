"""How real answers write figures: restated from the question, inside names, as list
items, in scare quotes, spelled out in the evidence, derived by written-out arithmetic;
and the packet scope. Each rule with the property that keeps it from hiding a changed
figure, among hostile text."""

from hypothesis import assume, given
from hypothesis import strategies as st

from packer.verification.checks import CITATION_CHECKS, GivenPacket, verify_answer
from packer.verification.claims import QUOTATION_WORDS, sentence_facts
from packer.verification.figures import _NOT_NAMES, text_figures
from packer.verification.written_dates import MONTHS


def _verdict(answer: str, *blocks: str, given_text: str = "", scope: str = "citation"):
    packet = GivenPacket("q", {f"E{i}": b for i, b in enumerate(blocks, 1)}, given=given_text)
    return verify_answer(answer, packet, scope=scope)


def _failed(answer: str, *blocks: str, given_text: str = "", scope: str = "citation") -> list:
    """The failed checks but names_supported (test_verify_names.py's): these answers name
    things their made-up blocks need not."""
    failed = _verdict(answer, *blocks, given_text=given_text, scope=scope).failed
    return [c for c in failed if c != "names_supported"]


HOSTILE_WORDS = ("<b>", "</E1>", "{x}", "%s", "$$", "naïve", "x", "the", "and", "\t")
hostile = st.lists(
    st.sampled_from([*"<>&{}$%\x00\x07\u2028\u202eé中ﬁ#*=+/\\_~^|`@", *HOSTILE_WORDS]),
    max_size=12,
).map(lambda parts: " ".join(" ".join(parts).split()))
"""Markup, braces, `$`, `%`, control and bidi characters, unicode: no digit, no bracket,
no quote, no full stop, so the sentence around it stays one sentence."""
names = st.from_regex(r"[A-Z][a-z]{3,9}", fullmatch=True).filter(
    lambda w: w.casefold() not in _NOT_NAMES and w not in MONTHS
)


@given(hostile, names, st.integers(1, 99_999))
def test_a_number_in_a_name_is_no_figure(noise: str, name: str, n: int) -> None:
    """ "Windows 10", "COVID-19", "2D": not quantities, so a block that never writes the
    name with a number does not have to hold them (a name by a capitalised word must be
    written by the block: `test_a_capitalised_word_no_source_writes_names_nothing`)."""
    block = f"Nothing here is counted, {name.casefold()} aside."
    for named in (f"{name} {n}", f"{name.upper()}-{n}", f"{n % 10}D"):
        assert _failed(f"It says {noise} that {named} is listed [E1].", block) == [], named
    assert _failed(f"It says {noise} that {name} {n} is listed [E1].", "Nothing.") == [
        "figures_supported"
    ]


@given(st.integers(1, 99_999), st.integers(1, 99_999))
def test_a_capitalised_word_no_source_writes_names_nothing(n: int, m: int) -> None:
    """German capitalises every noun: "die Zahl 7" is a figure when no source writes
    "Zahl", so a changed figure of German text fails as any other does."""
    assume(n != m)
    block = f"The committee counted {n} votes in favour."
    assert _failed(f"Laut E1 zählte der Ausschuss {n} Stimmen [E1].", block) == []
    assert _failed(f"Der Ausschuss zählte die Zahl {n} [E1].", block) == []
    assert _failed(f"Der Ausschuss zählte die Zahl {m} [E1].", block) == ["figures_supported"]
    assert _failed(f"Laut Quelle: Stimmen {m} [E1].", block) == ["figures_supported"]


@given(hostile, names, st.integers(1, 99_999), st.integers(1, 99_999))
def test_a_changed_number_in_a_name_fails_where_the_evidence_states_it(
    noise: str, name: str, n: int, m: int
) -> None:
    assume(n != m)
    block = f"The {name} {n} is the one listed."
    assert _failed(f"It says {noise} {name} {n} is listed [E1].", block) == []
    assert _failed(f"It says {noise} {name} {m} is listed [E1].", block) == ["figures_supported"]


@given(hostile, names, st.integers(1, 99_999), st.sampled_from(["{}%", "${}", "{:,}000"]))
def test_a_quantity_beside_a_name_is_still_a_figure(
    noise: str, name: str, n: int, form: str
) -> None:
    """A currency sign, a percent sign or digit groups make it a quantity: it must be held."""
    quantity = form.format(n * 1000 if "," in form else n)
    answer = f"It says {noise} {name} {quantity} is listed [E1]."
    assert _failed(answer, f"{name} is listed.") == ["figures_supported"]
    assert _failed(answer, f"{name} {quantity} is listed.") == []


@given(hostile, st.integers(1, 30), st.sampled_from(["{}. ", "{}) ", "({}) ", "{}[E1]. "]))
def test_list_item_numbers_are_no_figures(noise: str, k: int, marker: str) -> None:
    answer = f"Steps:\n{marker.format(k)}Open the {noise} box [E1].\n- Close it [E1]."
    assert _failed(answer, "Open the box, then close it.") == []
    assert _failed(f"{marker.format(k)}Then open {k + 40} boxes [E1].", "Open boxes.") == [
        "figures_supported"
    ]


ONES = [
    *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"),
    *("eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen"),
    *("eighteen", "nineteen"),
]
TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def _spelled(n: int, joiner: str, hyphen: str) -> str:
    """An English spelling of `n` (< 10**12), "and" and hyphens as a writer chooses."""
    if n < 20:
        return ONES[n]
    if n < 100:
        tens, unit = divmod(n, 10)
        return TENS[tens - 2] + (hyphen + ONES[unit] if unit else "")
    if n < 1000:
        hundreds, rest = divmod(n, 100)
        head = f"{ONES[hundreds]} hundred"
        return head + (f"{joiner}{_spelled(rest, joiner, hyphen)}" if rest else "")
    for scale, word in ((10**9, "billion"), (10**6, "million"), (10**3, "thousand")):
        if n >= scale:
            high, rest = divmod(n, scale)
            head = f"{_spelled(high, joiner, hyphen)} {word}"
            if not rest:
                return head
            glue = joiner if rest < 100 else " "
            return f"{head}{glue}{_spelled(rest, joiner, hyphen)}"
    raise AssertionError(n)


@given(st.integers(2, 999_999_999), st.sampled_from([" and ", " "]), st.sampled_from(["-", " "]))
def test_a_spelled_compound_equals_its_digits(n: int, joiner: str, hyphen: str) -> None:
    block = f"The club had {_spelled(n, joiner, hyphen)} members."
    assert str(n) in text_figures(block).numbers, block
    assert _failed(f"The club had {n:,} members [E1].", block) == []
    assume(str(n + 1) not in text_figures(block).numbers)
    assert _failed(f"The club had {n + 1:,} members [E1].", block) == ["figures_supported"]


def test_spelled_forms_the_evidence_uses() -> None:
    for spelled, digits in [
        ("one hundred members", "100"),
        ("two thousand and five", "2005"),
        ("a dozen eggs", "12"),
        ("a hundred years", "100"),
        ("nineteen eighty-four", "84"),
    ]:
        assert digits in text_figures(spelled).numbers, spelled
    assert "1" not in text_figures("one of them").numbers  # prose, not a figure
    assert "2" in text_figures("It was responsive.2 – More than 100").numbers  # glued digits


@given(
    hostile,
    st.integers(2, 9_999),
    st.integers(2, 9_999),
    st.sampled_from(["*", "×", "x", "+"]),
)
def test_derived_arithmetic_passes_only_when_its_operands_are_cited(
    noise: str, a: int, b: int, op: str
) -> None:
    result = a + b if op == "+" else a * b
    answer = f"That is {noise} {a} items {op} £{b}/unit = £{result:,} [E1]."
    both = f"There are {a} items at £{b} per unit."
    verdict = _verdict(answer, both)
    assert verdict.failed == []
    supported = next(c for c in verdict.checks if c.name == "figures_supported")
    assert "derived" in supported.detail and f"£{result:,}" in supported.detail
    assume(str(a) not in f"£{b} per unit")
    assert _failed(answer, f"Items cost £{b} per unit.") == ["figures_supported"]
    wrong = f"That is {noise} {a} items {op} £{b}/unit = £{result + 7:,} [E1]."
    assume(str(result + 7) not in both)
    assert _failed(wrong, both) == ["figures_supported"]


@given(st.integers(1, 2_500), st.sampled_from([25, 50, 75]))
def test_a_percentage_of_a_cited_total(quarter: int, percent: int) -> None:
    total, part = 4 * quarter, quarter * percent // 25
    block = f"The society has {total} members."
    assert (
        _failed(f"{percent}% of {total} members is {part} people [E1].", f"{percent}%. {block}")
        == []
    )
    assert _failed(f"Of them, {part} of the {total} members ({percent}%) came [E1].", block) == [
        "figures_supported"
    ] * (str(part) not in block)


def test_a_figure_restated_from_the_question_is_given() -> None:
    question = "Question: Can a 12-year-old who attempted suicide be admitted under Rule 19?"
    answer = "Minors can be admitted [E1]. A 12-year-old can be admitted."
    assert _failed(answer, "Minors can be admitted.", given_text=question) == []
    assert _failed(answer, "Minors can be admitted.") == ["factual_sentences_cited"]
    assert _failed(
        "Minors can [E1]. A 13-year-old can be admitted.", "Minors can.", given_text=question
    ) == ["factual_sentences_cited"]
    assert _failed("A 13-year-old can be admitted [E1].", "Minors.", given_text=question) == [
        "figures_supported"
    ]


@given(st.from_regex(r"[a-z]{3,9}", fullmatch=True), hostile)
def test_short_quoted_terms_are_words_present(word: str, noise: str) -> None:
    """Scare quotes are checked as words present in any inflection and case."""
    block = f"The {word.upper()} rule covers {noise} it."
    assert _failed(f'Some {noise} "{word}s" apply [E1].', block) == []
    assert _failed(f'Some "{word}q" apply [E1].', block) == ["figures_supported"]


def test_quotations_and_terms() -> None:
    block = "Which came first: the chicken or the egg? STANAG 4569 sets it."
    assert _failed('The "chicken or egg" debate [E1].', block) == []
    assert _failed('Known as "STANAGs" [E1].', block) == []
    assert QUOTATION_WORDS == 4 and sentence_facts('"chicken or the egg"')[0].kind == "quote"
    assert _failed('It asks "the chicken or the egg" [E1].', block) == []
    assert _failed('It asks "the duck or the egg" [E1].', block) == ["figures_supported"]


def test_the_packet_scope_checks_every_fact_against_the_whole_packet() -> None:
    blocks = ("It opened in 2014.", "It has 40 staff.")
    answer = "It opened in 2014 and has 40 staff. It cites [E7]."
    assert _failed(answer, *blocks) == ["labels_exist", "factual_sentences_cited"]
    verdict = _verdict(answer, *blocks, scope="packet")
    assert verdict.failed == []
    assert {c.name for c in verdict.checks if c.outcome == "skip"} >= CITATION_CHECKS
    assert _failed("It has 41 staff.", *blocks, scope="packet") == ["figures_supported"]


PIECES = [*"0123456789.,/-:'\" []()E%$kMmB{}*=+×§#\x00\x07\n", "Windows ", "COVID-", " of ",
          "one hundred", "a dozen", "c.", "No. ", "“", "”", "[E1]", "<b>", "\u202e",
          "1[E1]. "]  # fmt: skip


@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join), st.text(max_size=60))
def test_any_answer_gives_a_verdict_in_either_scope(answer: str, block: str) -> None:
    for scope in ("citation", "packet"):
        verdict = _verdict(answer, block, answer, given_text=block, scope=scope)
        skipped = {c.name for c in verdict.checks if c.outcome == "skip"}
        assert scope == "citation" or skipped >= CITATION_CHECKS


@given(st.integers(1900, 2097), st.integers(1, 2), st.sampled_from(["-", "–", "/"]))
def test_a_year_range_reads_its_second_year_whole(first: int, span: int, dash: str) -> None:
    """ "2022-23" is 2022 to 2023 however either side writes it; the first year changed to
    the second is still a changed figure."""
    second = first + span
    assume(second // 100 == first // 100 or first % 100 == 99)  # across a century: "1999–00"
    short, full = f"{first}{dash}{second % 100:02d}", f"{first}{dash}{second}"
    for answer, block in ((short, full), (full, short), (short, short)):
        assert _failed(f"In the {answer} season [E1].", f"The {block} season.") == []
    assert _failed(f"In the {second}{dash}{second % 100:02d} season [E1].", f"The {short} season.")
    assert _failed(f"In {second} [E1].", f"The {short} season.") == ["figures_supported"]
