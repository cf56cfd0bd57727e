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

The two sides of a yes/no question (`opposite_sides`) are read more strictly
than a vote: a passage takes a position only when a sentence holds most of the
question's terms and all such sentences agree (see `positions`).
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from packer.answer_evidence import AnswerKind
from packer.polarity import facets_apart
from packer.records import Evidence, terms_in
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


POSITION_SHARE = 2 / 3
"""The share of a yes/no question's content words (three at least) one sentence of a
passage must hold for the passage to take a position on the question's statement."""


def positions(records: Sequence[Evidence], terms: frozenset[str], memos: Memos) -> dict[int, bool]:
    """The position each record takes on a yes/no question with content words `terms`, by
    index: True when it denies the statement. A passage's position is the polarity of its
    sentences holding the most question terms (`POSITION_SHARE` of them at least, each
    read by its main clause: `statements`); one whose such sentences differ takes none.
    Stricter than the vote's reading (`asserted`: two terms suffice, the first of the
    best sentences decides), which takes a passage merely mentioning the subject for a
    side. A sentence's words are words of its passage, found in its canonical form: a
    passage holding fewer than `need` of the terms there has no sentence holding them,
    and its statements are not read (on the speed bench, none of the 1,540 passages of
    its yes/no questions holds them: 2.8 us a candidate of a cold pack, 3%)."""
    need = max(3, math.ceil(POSITION_SHARE * len(terms)))
    out: dict[int, bool] = {}
    for k, record in enumerate(records):
        if len(terms_in(terms, record.canonical)) < need:
            continue  # no sentence holds `need` terms: its statements are not read
        held = [(len(s.content & terms), s.negated) for s in memos.statements(record.text).all]
        most = max((h for h, _ in held), default=0)
        taken = {negated for h, negated in held if h == most}
        if most >= need and len(taken) == 1:
            out[k] = taken.pop()
    return out


def opposite_sides(
    records: Sequence[Evidence], sides: Mapping[int, bool], ranks: int
) -> tuple[int, int] | None:
    """Of records in rank order and their `positions`: the shortest pair of a passage
    affirming the statement and one denying it, of different documents, the first of
    them among the best `ranks` records (i < j); or None. "Does coffee lower the risk of
    diabetes?" against "a trial found that coffee did not lower the risk of diabetes"
    and "women who drank four cups a day had a lower risk of diabetes": the two need not
    make one statement in the same words (`polarity.polarity_conflicts`), only the
    question's. The shortest pair, because both sides fit whole where the best-ranked
    passage of a side does not; one of the best ranked, because a pair the retriever put
    low is more often about something else. Rejected: every affirming passage against
    every denying one (the first admitted holds the best-ranked, often the longest)."""
    pairs = [
        (len(records[i].text) + len(records[j].text), i, j)
        for i, a in sides.items()
        if i < ranks
        for j, b in sides.items()
        if j > i
        and a != b
        and records[i].document_id != records[j].document_id
        and not facets_apart(records[i], records[j])
    ]
    return min(pairs)[1:] if pairs else None
