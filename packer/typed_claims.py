"""Typed claims: the numbers, dates and names each sentence states (the question's slot,
which kind of value answers it, is `packer.question`).

A claim is read from a sentence's canonical words (`records.canonical_words`,
which keeps signs, currencies and percent): a number with its sign, scale
("3.5 million" = 3,500,000) and unit (the currency before it, or the word
after it: "%", "km", "people"); a date with its precision (year, month or
day; "March 2019" is compatible with "5 March 2019", not with "June 2019");
a name, a run of capitalized words. Claims are a function of the text
alone: a worker's `PackerRuntime` memoizes them per distinct text, as it
does the text facts. The rule that compares them across documents, and
what it measured, is `packer.slot_conflicts`.
"""

import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from packer.native import kernels
from packer.records import MONTHS, STOPWORDS, SYMBOLS, canonical_words, name_words, scan_words
from packer.units import bounds_of

_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
SCALES = {
    "hundred": 1e2, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12,
    "m": 1e6, "bn": 1e9, "k": 1e3,
}  # fmt: skip
_MONTH_NUMBER = {
    name: i
    for i, name in enumerate(
        ["january", "february", "march", "april", "may", "june", "july", "august",
         "september", "october", "november", "december"],
        start=1,
    )
}  # fmt: skip
_CURRENCIES = frozenset(SYMBOLS) - frozenset("%‰<>=≤≥≠≈±~⁺⁻⁼₊₋₌")
_PERCENT = frozenset(("%", "percent", "pct"))
_NOT_UNITS = STOPWORDS | frozenset(("per", "and", "or", "to", "than", "more", "less"))


@dataclass(frozen=True, slots=True)
class Quantity:
    """A number as stated: signed and scaled, with its unit ("" when none follows)."""

    value: float
    unit: str
    at: int = field(default=0, compare=False)
    """Where in its sentence (word index): which value answers is the one nearest the
    question's words."""


@dataclass(frozen=True, slots=True)
class Date:
    """A date to its precision: month and day are None when the text does not say."""

    year: int | None
    month: int | None
    day: int | None
    at: int = field(default=0, compare=False)

    def compatible(self, other: "Date") -> bool:
        """Whether both can be the same day: every part both state is equal."""
        return all(
            a is None or b is None or a == b
            for a, b in ((self.year, other.year), (self.month, other.month), (self.day, other.day))
        )


@dataclass(frozen=True, slots=True)
class Name:
    """A run of words written capitalized (folded): "Heather Ball", "Front Royal"."""

    words: tuple[str, ...]
    at: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class SentenceClaims:
    """The canonical words of one sentence (in order), whether it is a whole sentence
    (`units.complete`: not a table row or a cut piece), and the numbers and dates
    it states."""

    words: tuple[str, ...]
    complete: bool
    numbers: tuple[Quantity, ...]
    dates: tuple[Date, ...]
    names: frozenset[str]
    """Words written capitalized past the sentence's first (folded): names."""
    named: tuple[Name, ...]
    """The runs of capitalized words (`name_runs`), left to right."""


def _month(word: str) -> int | None:
    return _MONTH_NUMBER.get(MONTHS.get(word, word))


def _day(word: str) -> int | None:
    return int(word) if word.isdigit() and 1 <= int(word) <= 31 else None


def _year(word: str) -> int | None:
    return int(word) if word.isdigit() and len(word) == 4 and 1000 <= int(word) <= 2100 else None


def _read(words: list[str]) -> tuple[tuple[Quantity, ...], tuple[Date, ...]]:
    """Numbers and dates of one sentence's canonical words, left to right.

    A month name with a day or year next to it is a date (a lone "may" is a
    modal); a four-digit year with no currency, scale or unit after it is a
    date of year precision; every other number is a quantity.
    """
    numbers: list[Quantity] = []
    dates: list[Date] = []
    used: set[int] = set()
    for i, word in enumerate(words):
        month = _month(word)
        if month is None:
            continue
        day = year = None
        k = i + 1
        if k < len(words) and _year(words[k]) is None and _day(words[k]) is not None:
            day = _day(words[k])
            used.add(k)
            k += 1
        if k < len(words) and _year(words[k]) is not None:
            year = _year(words[k])
            used.add(k)
        if day is None and i and _year(words[i - 1]) is None and _day(words[i - 1]) is not None:
            day = _day(words[i - 1])
            used.add(i - 1)
        if day is not None or year is not None:
            dates.append(Date(year, month, day, i))
    for i, word in enumerate(words):
        if i in used or not _NUMBER.fullmatch(word):
            continue
        value = float(word)
        before = words[i - 1] if i else ""
        unit = before if before in _CURRENCIES else ""
        if before == "minus":
            value = -value
        j = i + 1
        if j < len(words) and words[j] in SCALES:
            value *= SCALES[words[j]]
            j += 1
        nxt = words[j] if j < len(words) else ""
        if nxt == "per" and j + 1 < len(words) and words[j + 1] == "cent":
            nxt = "%"
        if not unit and nxt in _PERCENT:
            unit = "%"
        elif not unit and nxt.isalpha() and nxt not in _NOT_UNITS and _month(nxt) is None:
            unit = nxt
        if not unit and j == i + 1 and _year(word) is not None:
            dates.append(Date(int(word), None, None, i))
            continue
        numbers.append(Quantity(value, unit, i))
    return tuple(numbers), tuple(dates)


def capital_runs(
    cased: Sequence[str] | str, words: Sequence[str] | str, stopwords: AbstractSet[str]
) -> list[tuple[tuple[str, ...], int]]:
    """Runs of capitalized words (two characters or more, the first upper case) of the
    `cased` words (or of the cased text they are scanned from, `records.scan_words`),
    each as its folded `words` (or the canonical form they are joined in by single
    spaces) not in `stopwords` (a run left empty is none) with its first index: a run
    at index 0 needs two words. None when the two differ in length (in C when built,
    `_native.capital_runs`, where texts make no str but for a run's words)."""
    if isinstance(cased, str):
        cased = scan_words(cased)
    if isinstance(words, str):
        words = words.split(" ") if words else []
    if len(cased) != len(words):
        return []
    capital = [i for i, w in enumerate(cased) if len(w) > 1 and w[0].isupper()]
    runs: list[tuple[tuple[str, ...], int]] = []
    start = last = -2
    for i in [*capital, -2]:  # the sentinel closes the last run
        if i == last + 1:
            last = i
            continue
        named = tuple(w for w in words[start : last + 1] if w not in stopwords)
        if start >= 0 and named and last > 0:  # a run at the start needs two words
            runs.append((named, start))
        start = last = i
    return runs


_capital_runs = kernels.capital_runs if kernels else capital_runs


def name_spans(
    cased: Sequence[str] | str, words: Sequence[str] | str
) -> list[tuple[tuple[str, ...], int]]:
    """Runs of capitalized words, stopwords left out ("The Hague" is "hague"), each with
    the index it starts at: a run at the sentence's start needs two words (its first
    word is capitalized anyway). Read from the sentence's cased canonical words (or the
    cased text they are scanned from), which `words` (the folded ones, or their
    canonical form) align with; none when the folding changed the word count (a
    ligature). Plain pairs, for a memo of many texts (a `Name` costs more to make)."""
    return _capital_runs(cased, words, STOPWORDS)


def name_runs(cased: Sequence[str], words: Sequence[str]) -> tuple[Name, ...]:
    """`name_spans` as `Name`s."""
    return tuple(Name(named, at) for named, at in name_spans(cased, words))


def claims_of(text: str) -> tuple[SentenceClaims, ...]:
    """The typed claims of each sentence of `text` (a function of the text alone)."""
    out = []
    for start, end, done in bounds_of(text):
        sentence = text[start:end]
        words = canonical_words(sentence)
        cased = canonical_words(sentence, fold=False)
        numbers, dates = _read(words)
        named = name_runs(cased, words)
        out.append(SentenceClaims(tuple(words), done, numbers, dates, name_words(cased), named))
    return tuple(out)
