"""The `amount` conflict rule: two documents that give the amount a question asks for
("how much", "how many", "how long", ...) as different measured quantities.

"Meals on business travel are reimbursed up to $75 per day." beside "The meal
allowance while travelling is $60 per day.", asked "How much is the meal allowance
per day?", is the plainest disagreement there is, yet no other rule sees it: the
two are no copies of one report (`copy`), neither negates the other (`polarity`),
and the question names no entity a passage must name (`slot`). Here each passage
answers with its sentence sharing the most of the question's words (two at least,
or all there are; compared by stem, so `meals` is `meal`) that states a quantity
with a currency or a unit (`packer.equivalence.readings`: a bare count, such as a
population or a year, is left to the `slot` rule), per the same period (`per day`
on both, or on neither). Two passages of different documents disagree when their
quantities are of one dimension, none is one of the other's (`same_reading`:
`$60` is not `$75`; `12 km` is `7.5 miles`), and neither passage states the other's
anywhere. Measured (every gated candidate, 2,048 tokens): one ConflictNQ request
flagged (the real passage's area against three fakes'), none of HotpotQA's,
RAMDocs' or MultiHop-RAG's 500. Rejected: bare numbers (RAMDocs populations and
census figures of two correct documents read as contradictions: the `slot` rule's
low precision); any quantity for any number question (6 HotpotQA requests flagged,
each two passages about different subjects: a suburb's distance beside a city's);
and requiring the question's words whole (`meals` against `meal`, the plain case).
"""

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations

from packer.equivalence import CURRENCIES, UNITS, Reading, readings, same_reading
from packer.polarity import facets_apart
from packer.question import Question
from packer.records import Evidence
from packer.runtime import Memos

_ASKING = frozenset(("much", "many", "per", "number", "amount", "total"))
"""Question words that say an amount is asked, not what it is of."""


def _stem(word: str) -> str:
    """A crude stem: the word less its last three letters, kept to four at least
    (`meals`, `meal`; `travelling`, `travel` stay apart, which costs nothing here)."""
    return word[: max(4, len(word) - 3)]


@dataclass(frozen=True, slots=True)
class _Amount:
    """A passage's answer: the measured quantities of its answering sentence, its period
    (the words after `per`), and every measured quantity the passage states."""

    index: int
    answer: tuple[Reading, ...]
    period: frozenset[str]
    stated: tuple[Reading, ...]


def asked_dimension(question: Question) -> str | None:
    """The dimension the question asks an amount in: the unit or currency it names
    (`square miles`, `dollars`; a unit of three letters or more, as `in` and `m` are
    words too), else money for `how much`; None when it names none (a count, a
    population: no measured amount is asked)."""
    if question.slot != "number":
        return None
    words = question.words
    for k in range(1, len(words)):
        for size in (3, 2, 1):
            phrase = " ".join(words[k : k + size])
            if len(phrase) < 3 or words[k - 1][0].isdigit():
                continue  # `10000 metres`: a given figure, not the amount asked
            if phrase in UNITS:
                return UNITS[phrase][0]
            if phrase in CURRENCIES:
                return "currency"
    return "currency" if "how much" in question.joined else None


def _measured(words: Iterable[str], dimension: str) -> tuple[Reading, ...]:
    """The quantities of `words` in the asked dimension (any currency for `currency`)."""
    return tuple(r for r in readings(list(words)) if r.dimension.split(":")[0] == dimension)


def _amount(
    index: int, record: Evidence, cues: frozenset[str], dimension: str, memos: Memos
) -> _Amount | None:
    """The passage's answer, or None when no sentence stating a quantity of the asked
    `dimension` shares enough of the question's words (`cues`, stemmed)."""
    best: tuple[int, tuple[str, ...]] = (0, ())
    stated: list[Reading] = []
    for claims in memos.typed_claims(record.text):
        measured = _measured(claims.words, dimension)
        stated.extend(measured)
        shared = len(cues.intersection(map(_stem, claims.words)))
        if measured and claims.complete and shared > best[0]:
            best = (shared, claims.words)
    shared, words = best
    if shared < min(2, len(cues)) or not words:
        return None
    period = frozenset(words[k + 1] for k, w in enumerate(words[:-1]) if w == "per")
    return _Amount(index, _measured(words, dimension), period, tuple(stated))


def _disagree(p: _Amount, q: _Amount) -> bool:
    """One dimension and period, no quantity of one among the other passage's."""
    dimensions = {r.dimension for r in p.answer} & {r.dimension for r in q.answer}
    if not dimensions or p.period != q.period:
        return False
    return not any(same_reading(a, s) for a in p.answer for s in q.stated) and not any(
        same_reading(a, s) for a in q.answer for s in p.stated
    )


def amount_conflicts(
    records: list[Evidence], question: Question, memos: Memos
) -> list[tuple[int, int, str]]:
    """Pairs (i < j) of passages of different documents answering the question's amount
    with different measured quantities (rule `amount`). Claims are read once per
    distinct text (`memos`); pairs are compared among the passages that answer, a few
    of a request's candidates."""
    dimension = asked_dimension(question)
    if dimension is None:
        return []
    cues = frozenset(map(_stem, question.terms - _ASKING))
    answers = [
        a for i, r in enumerate(records) if (a := _amount(i, r, cues, dimension, memos)) is not None
    ]
    pairs = []
    for p, q in combinations(answers, 2):
        a, b = records[p.index], records[q.index]
        if a.document_id == b.document_id or facets_apart(a, b):
            continue
        if _disagree(p, q):
            pairs.append((p.index, q.index, "amount"))
    return pairs
