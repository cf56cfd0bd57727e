"""Numbers written in words ("four", "twenty-one", "third", "two million").

The evidence side of answer checking reads them, so an answer may give them
in digits; an answer's own spelled numbers are not figures (`packer.verification.figures`).
Kept apart from the digit readings because it is a vocabulary, not a grammar.
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
