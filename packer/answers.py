"""The distinct answers a request's candidates assert, each with the passages carrying it.

Each passage asserts at most one answer (`asserted`). For a question asking a
value (`question.Question.slot`) it is a value of that kind in the complete
sentence holding the most question terms, the one nearest a question term: a
number with its unit, a date to its precision, a name (a run of capitalized
words) none of whose words the question writes. For a yes/no question
(`answer_evidence.answer_kind` is `polar`) the answers are the two positions:
a passage affirms or denies by the polarity of its statement holding the most
question terms (`statements`). Answers are ranked by how many candidates carry
them, then by their best-ranked carrier: the value most candidates state is
most likely the answer. Rejected: every value of every sentence holding question
terms (the names around the answer outvoted it: HotpotQA -2.8 at 256). A
function of the texts and the question alone.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from packer.answer_evidence import AnswerKind
from packer.records import Evidence
from packer.runtime import Memos
from packer.typed_claims import SentenceClaims


@dataclass(frozen=True, slots=True)
class Answer:
    """One distinct answer and the indices of the records that assert it, best first."""

    key: str
    carriers: tuple[int, ...]


Placed = tuple[str, int]
"""A value's key and its word index in the sentence."""


def _placed(claims: SentenceClaims, kind: AnswerKind, asked: frozenset[str]) -> list[Placed]:
    """The sentence's values of the kind asked, as keys, with where each stands."""
    if kind == "number":
        return [(f"{q.value:g} {q.unit}", q.at) for q in claims.numbers]
    if kind == "date":
        return [(f"{d.year}-{d.month}-{d.day}", d.at) for d in claims.dates]
    return [(" ".join(n.words), n.at) for n in claims.named if asked.isdisjoint(n.words)]


def asserted(record: Evidence, kind: AnswerKind, terms: frozenset[str], memos: Memos) -> str | None:
    """The one answer a passage asserts: for a value, in its complete sentence holding the
    most question `terms` (two at least, or all there are) and a value of the kind asked,
    the value nearest a question term; for a yes/no question, the polarity of its
    statement holding the most terms. None when no sentence qualifies."""
    need = min(2, len(terms))
    if kind == "polar":
        statements = memos.statements(record.text).all
        held = [(len(s.content & terms), -k, s) for k, s in enumerate(statements)]
        most, _, stated = max(held, key=lambda h: h[:2], default=(0, 0, None))
        if stated is None or most < need:
            return None
        return "deny" if stated.negated else "affirm"
    best: SentenceClaims | None = None
    most = need - 1
    for claims in memos.typed_claims(record.text):
        held = len(terms.intersection(claims.words))
        if claims.complete and held > most and _placed(claims, kind, terms):
            most, best = held, claims
    if best is None:
        return None
    where = [i for i, w in enumerate(best.words) if w in terms]
    values = _placed(best, kind, terms)
    return min(values, key=lambda v: min(abs(v[1] - i) for i in where))[0]


def distinct_answers(
    records: Sequence[Evidence], kind: AnswerKind, terms: frozenset[str], memos: Memos
) -> list[Answer]:
    """The answers the `records` (in rank order) assert to a question of this `kind` with
    these content `terms`, most carried first, then by their best-ranked carrier."""
    if not terms:
        return []
    carriers: dict[str, list[int]] = {}
    for index, record in enumerate(records):
        key = asserted(record, kind, terms, memos)
        if key is not None:
            carriers.setdefault(key, []).append(index)
    ranked = sorted(carriers.items(), key=lambda kv: (-len(kv[1]), kv[1][0], kv[0]))
    return [Answer(key, tuple(indices)) for key, indices in ranked]
