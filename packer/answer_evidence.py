"""Which sentences of a passage answer the question: answer-type evidence for the choice
of a passage's smaller unit (`packer.packet.Packet.unit_of`).

A passage that goes in as a part should go in as the sentence that answers
the question or states the passage's position on it, not its opening by
default. A sentence is answer evidence when it holds question terms and a
value of the kind the question asks for (`typed_claims.question_slot`: a
number for "how many", a date for "when", a name, not one of the question's
words, for "who" and "where"), or, for a yes/no question ("Is X free of
...?"), when it holds at least two of the question's terms (all, when it has
fewer): it takes a position on the question's statement. Rejected: a
bonus for any sentence with a negation or modal (a stance on something else
is no answer).
"""

from typing import Literal

from packer.records import canonical_words
from packer.typed_claims import SentenceClaims, question_slot

AnswerKind = Literal["number", "date", "name", "polar"]
_POLAR_OPENERS = frozenset(
    ("is", "are", "was", "were", "does", "do", "did", "can", "could", "has", "have", "had",
     "will", "would", "should", "may", "must", "shall")
)  # fmt: skip


def answer_kind(question: str) -> AnswerKind | None:
    """What answers the question: a typed value, a position (a yes/no question), or None."""
    slot = question_slot(question)
    if slot is not None:
        return slot
    words = canonical_words(question)
    return "polar" if words and words[0] in _POLAR_OPENERS else None


def answers(
    claims: SentenceClaims, kind: AnswerKind, held: frozenset[str], terms: frozenset[str]
) -> bool:
    """Whether a sentence (its `claims`, holding the question `terms` in `held`) answers
    a question of this `kind`."""
    if not held:
        return False
    if kind == "polar":
        return len(held) >= min(2, len(terms))
    if kind == "number":
        return bool(claims.numbers)
    if kind == "date":
        return bool(claims.dates)
    return any(terms.isdisjoint(n.words) for n in claims.named)
