"""Which sentences of a passage answer the question: answer-type evidence for the choice
of a passage's smaller unit (`packer.packet.Packet.unit_of`).

A passage that goes in as a part should go in as the sentence that answers
the question or states the passage's position on it, not its opening by
default. A sentence is answer evidence when it holds question terms and a
value of the kind the question asks for (`question.Question.slot`: a
number for "how many", a date for "when", a name, not one of the question's
words, for "who" and "where"), or, for a yes/no question ("Is X free of
...?"), when it holds at least two of the question's terms (all, when it has
fewer): it takes a position on the question's statement. Rejected: a
bonus for any sentence with a negation or modal (a stance on something else
is no answer).
"""

import re
from typing import Literal

from packer.question import Question
from packer.records import MONTHS

AnswerKind = Literal["number", "date", "name", "polar"]
_POLAR_OPENERS = frozenset(
    ("is", "are", "was", "were", "does", "do", "did", "can", "could", "has", "have", "had",
     "will", "would", "should", "may", "must", "shall")
)  # fmt: skip


def answer_kind(question: Question) -> AnswerKind | None:
    """What answers the question: a typed value, a position (a yes/no question), or None."""
    if question.slot is not None:
        return question.slot
    words = question.words
    return "polar" if words and words[0] in _POLAR_OPENERS else None


_DIGIT = re.compile(r"\d")
_YEAR = re.compile(r"\b(?:1[0-9]|20)\d\d\b")
_MONTH = re.compile(r"\b(?:" + "|".join(sorted({*MONTHS, *MONTHS.values()})) + r")\b")
_NAME = re.compile(r"(?<=\s)[A-Z][\w'’-]+")


def answers(
    sentence: str, folded: str, kind: AnswerKind, held: frozenset[str], terms: frozenset[str]
) -> bool:
    """Whether a sentence (as written and case-folded, holding the question `terms` in
    `held`) answers a question of this `kind`. Read from the text directly, not from its
    typed claims (`packer.typed_claims`, three times the cost on a cold worker): a digit
    for a number, a year or a month for a date, a capitalized word past the first that
    is no question term for a name."""
    if not held:
        return False
    if kind == "polar":
        return len(held) >= min(2, len(terms))
    if kind == "number":
        return bool(_DIGIT.search(folded))
    if kind == "date":
        return bool(_YEAR.search(folded) or _MONTH.search(folded))
    return any(m.group().lower() not in terms for m in _NAME.finditer(sentence))
