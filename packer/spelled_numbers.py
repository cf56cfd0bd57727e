"""Numbers written in words ("four", "twenty-one", "third", "two million").

The evidence side of answer checking reads them, so an answer may give them
in digits; an answer's own spelled numbers are not figures (`packer.figures`).
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
"""Read only inside a compound ("twenty-one"): alone they are mostly prose ("one of them",
"the first time", "a second"), and reading them would let a changed 1 or 2 pass."""
_SPELLED = re.compile(
    rf"\b(?:(?P<tens>{'|'.join(_TENS)})[-\s](?P<unit>{'|'.join(_UNITS[1:10] + _ORDINALS[1:10])})"
    rf"|(?P<word>{'|'.join(sorted(set(_WORD_VALUES) - _PROSE_WORDS, key=len, reverse=True))}))\b"
    r"(?:\s+(?P<scale>hundred|thousand|million|billion))?",
    re.IGNORECASE,
)
"""Numbers the evidence spells out ("four", "twenty-one", "third", "two million"): an
answer may write them in digits ("4", "21", "3rd", "2M"). Only the evidence is read so;
an answer's spelled numbers are not figures (see the module docstring)."""


def spelled_numbers(text: str) -> Iterator[tuple[int, str | None]]:
    """Each number `text` spells out, as its value and the scale word after it, if any."""
    for m in _SPELLED.finditer(text):
        if m["tens"]:
            value = _WORD_VALUES[m["tens"].lower()] + _WORD_VALUES[m["unit"].lower()]
        else:
            value = _WORD_VALUES[m["word"].lower()]
        scale = m["scale"].lower() if m["scale"] else None
        if scale == "hundred":
            value, scale = value * 100, None
        yield value, scale
