"""Text as corpora write it, read back into prose before figures and dates are read.

Retrieved text is often tokenized: a space before every punctuation mark
("October 3 , 2013", "in 2013 .", "45 %", "Smith 's"), `` ``...'' `` for quotes, " -- "
for a dash ("2007 -- 08"), and month names in lower case ("may 30"). `as_written`
undoes exactly these spellings, and the same function runs on the evidence and on the
answer, so a figure or date compares equal however either side spaced it.

It never joins digits: "3 , 500" stays two numbers ("3, 500"), and a spaced hyphen or
double hyphen between two digits becomes a range dash ("2007–08"), which the year-range
rule reads and nothing else does. A month name in any case is a month only beside a
number ("may 30", "30 MAY", "march 2010"): "they may" stays a verb.

Rejected: a tokenizer-aware reader per corpus (every corpus spaces differently, and one
reversible rule set covers the ones seen); folding the whole text to lower case (month
names are then found, but the name rules read capitals).
"""

import re

from packer.verification.written_dates import MONTHS

_CANONICAL = {form: name for name in MONTHS for form in (name.casefold(), name.upper())}
"""Month names in lower case and in capitals, by their usual spelling."""
_FORMS = "|".join(sorted(_CANONICAL, key=len, reverse=True))
_MONTH_NEAR_NUMBER = re.compile(
    rf"(?=[{''.join(sorted({f[0] for f in _CANONICAL}))}])"
    rf"(?<![^\W\d_])(?:({_FORMS})(?=\.?\s+\d)|(?<=\d\s)({_FORMS})(?![^\W\d_]))"
)
"""A month name in lower case or capitals before a number ("may 30", "MARCH 2010") or after
a day ("30 may"); "may" alone, or before a word, is left as written. Case-sensitive forms,
not a case-insensitive pattern, and first letters looked ahead: a fifth of the time."""
_SPACED_CLOSE = re.compile(r"(?<=\S)[ \t]+(?=[,.;:!?%)\]](?:\s|$))")
_REWRITES = (
    (("``", "''"), re.compile(r"``|''"), '"'),
    (("--", " - "), re.compile(r"(?<=\d)\s*(?:--|\s-\s)\s*(?=\d)"), "–"),
    (("--",), re.compile(r"\s--\s"), " – "),
    ((" - ",), re.compile(r"(?<=\w) - (?=[^\W\d_])"), "-"),
    ((" ,", " .", " ;", " :", " !", " ?", " %", " )", " ]"), _SPACED_CLOSE, ""),
    (("( ", "[ "), re.compile(r"(?<=[(\[])[ \t]+(?=\S)"), ""),
    ((" '", " ’"), re.compile(r"(?<=\w)[ \t]+(?=['’](?:s|re|ve|ll|d|m|t)\b)"), ""),
)
"""Tokenized spellings and what they stand for: `` and '' quotes, a spaced or double hyphen
between digits (a range), a spaced double hyphen (a dash), a spaced hyphen between words
("10 - million - per - year": "10-million-per-year"; never before a digit, so a dash
stays a dash before a figure: "the total - 45 -"), a space before closing
punctuation or after an opening bracket, and a space before a clitic ("Smith 's"). Each
runs only on text holding one of its marks (a third of the time on tokenized text)."""


def as_written(text: str) -> str:
    """`text` with tokenized punctuation and spacing undone, and month names beside a number
    in their usual case; text without either is returned as it is (the common case)."""
    for marks, pattern, replacement in _REWRITES:
        if any(mark in text for mark in marks):
            text = pattern.sub(replacement, text)
    return _MONTH_NEAR_NUMBER.sub(_month, text)


def _month(match: re.Match[str]) -> str:
    return _CANONICAL[match[1] or match[2]]
