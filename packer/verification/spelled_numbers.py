"""Numbers written in words ("four", "twenty-one", "third", "two million").

The evidence side of answer checking reads them, so an answer may give them
in digits; an answer's own spelled numbers are not figures (`packer.verification.figures`).
Kept apart from the digit readings because it is a vocabulary, not a grammar.
"one", "first" and "second" alone are prose, read only where they rank ("number one" is 1,
"first" and "second" the ranks an answer writes "1st" and "2nd"); every other word up to
"nineteenth", the tens and their ordinals are read alone ("three", "sixth": "3", "6th").
"""

import re
from collections.abc import Iterator

_UNITS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_ORDINALS = [
    "zeroth",
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
]
_TENTHS = [
    "twentieth",
    "thirtieth",
    "fortieth",
    "fiftieth",
    "sixtieth",
    "seventieth",
    "eightieth",
    "ninetieth",
]
_WORD_VALUES = {
    **{w: i for i, w in enumerate(_UNITS)},
    **{w: i for i, w in enumerate(_ORDINALS)},
    **{w: 20 + 10 * i for i, w in enumerate(_TENS)},
    **{w: 20 + 10 * i for i, w in enumerate(_TENTHS)},
}
_PROSE_WORDS = frozenset({"zero", "one", "zeroth", "first", "second"})
"""Read only inside a compound ("twenty-one", "one hundred"): alone they are mostly prose
("one of them", "the first time", "a second"), and reading them would let a changed 1 or 2
pass."""
ORDINAL = "ordinal "
"""The key prefix of a rank the evidence writes in words ("first": "ordinal 1"); an answer's
ordinal in digits ("1st") is found by it (`packer.verification.figures`), a cardinal is not."""
_RANKED = re.compile(r"\b(?:(?P<number>number|no\.)\s+one|(?P<ordinal>first|second))\b", re.I)
"""Prose words read as numbers where they rank: "number one" (a chart position, a seed) is 1,
and "first" / "second" are the ranks 1 and 2. Rejected: "one" alone and "first" as a
cardinal (see `_PROSE_WORDS`)."""
_ORDINAL_SUFFIX = re.compile(r"(?i:st|nd|rd|th)(?![^\W\d_])")
_MULTIPLIERS = {"hundred": 100, "thousand": 10**3, "million": 10**6, "billion": 10**9}
_ALL_WORDS = sorted([*_WORD_VALUES, *_MULTIPLIERS, "dozen"], key=len, reverse=True)
_WORD = rf"(?:{'|'.join(_ALL_WORDS)})"
_SPELLED = re.compile(
    rf"\b(?:an?\s+(?=(?:hundred|thousand|million|billion|dozen)\b))?{_WORD}"
    rf"(?:(?:-|\s+(?:and\s+)?|\s*,\s*(?={_WORD}\s+(?:hundred|thousand|million|billion)\b))"
    rf"{_WORD})*\b",
    re.IGNORECASE,
)
"""A run of number words ("four", "twenty-one", "third", "one hundred", "two thousand and
five", "a dozen", "a hundred"), joined by spaces, hyphens or "and": the evidence may spell
what an answer writes in digits ("4", "21", "3rd", "100", "2005", "12"). Only the evidence is
read so; an answer's spelled numbers are not figures (see the module docstring)."""
_SMALL = re.compile(r"\w+")


def _value(words: list[str]) -> list[int]:
    """The numbers a run of number words spells: one, or several where the run is no single
    number ("nineteen eighty-four" is 19 and 84, not 103)."""
    values: list[int] = []
    total = current = 0
    last = ""
    for word in words:
        if word in _MULTIPLIERS:
            scale = _MULTIPLIERS[word]
            if scale == 100:
                current = (current or 1) * 100
            else:
                total += (current or 1) * scale
                current = 0
        elif word == "dozen":
            current = (current or 1) * 12
        else:
            value = _WORD_VALUES[word]
            small = last in _WORD_VALUES and not (
                _WORD_VALUES[last] >= 20 and _WORD_VALUES[last] % 10 == 0 and value < 10
            )
            if small:  # two numbers side by side: close the first
                values.append(total + current)
                total = current = 0
            current += value
        last = word
    values.append(total + current)
    return values


def spelled_numbers(text: str) -> Iterator[tuple[int, str | None]]:
    """Each number `text` spells out, as its value (and no scale: it is applied)."""
    for m in _SPELLED.finditer(text):
        words = [
            w.casefold() for w in _SMALL.findall(m[0]) if w.casefold() not in ("a", "an", "and")
        ]
        if len(words) == 1 and words[0] in _PROSE_WORDS:
            continue
        for value in _value(words):
            yield value, None


def ranked_numbers(text: str) -> tuple[set[str], set[str]]:
    """The keys of the ranks `text` writes with prose words (`_RANKED`): "1" for "number one",
    `ORDINAL` keys for "first" and "second"; and the names written with a rank ("number",
    "no."), so an answer's "Number 2" is checked as a name-number against them."""
    if not any(w in text.casefold() for w in ("one", "first", "second")):
        return set(), set()
    keys, names = set(), set()
    for m in _RANKED.finditer(text):
        if m["number"]:
            keys.add("1")
            names.add(m["number"].casefold())
        else:
            keys.add(ORDINAL + ("1" if m["ordinal"].casefold() == "first" else "2"))
    return keys, names


def ordinal_keys(text: str, end: int, key: str) -> tuple[str, ...]:
    """The rank of a number ending at `end` when written as an ordinal in digits ("1st"): it
    is also found by the rank the evidence writes in words ("first", `ranked_numbers`)."""
    return (ORDINAL + key,) if _ORDINAL_SUFFIX.match(text, end) else ()
