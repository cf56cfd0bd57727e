"""The slot conflict rules: passages of different documents that answer the question's
slot with different typed values (`packer.typed_claims`), and the grouping of
disagreeing pairs (of any rule) into conflict groups (maximal cliques).

Rule `slot` compares numbers ("how many", "population") and dates ("when",
"what year"); rule `name` compares names ("who", "whom", "whose", "where").
Both passages must name the question's entities; each answers with the value
of its type nearest the question's words in its sentence sharing most of
them (for names: not the question's words nor the passage's own title, its
subject); neither value may appear in the other passage (for names: no word
of one written anywhere in the other). Both rules are off by default, decided
by `python -m benchmarks.meaning` at 2,048 tokens (pair precision over every
pair of a conflict group; recall: wrong passages grouped with a right one):

- `slot`: RAMDocs precision 0.45 (numbers, 29 pairs) and 0.32 (dates, 257),
  ConflictNQ 0.71 over 14 pairs (recall 0.004); HotpotQA requests flagged
  1.4%, MultiHop-RAG 0%. With `copy`, RAMDocs precision falls 0.71 -> 0.45
  for recall 0.45 -> 0.49.
- `name`: ConflictNQ precision 0.53 (161 pairs; 0.77 counting only the
  linked pairs), recall 0.038 (ten times the `slot` rule's); RAMDocs 0.22;
  HotpotQA 3.6%, MultiHop-RAG 0%. All three rules: RAMDocs 0.36 at recall
  0.52, ConflictNQ 0.55 at 0.043, HotpotQA 6.8%; dedup cost at 50
  candidates +0.7 to +2.7 ms cold (claims read afresh; three runs on a
  shared machine), +0.15 to +0.6 ms warm.
- Since groups are cliques (`conflict_groups`), the same runs give: `slot`
  RAMDocs 0.33 (numbers, 21 pairs) and 0.40 (dates, 193), ConflictNQ 0.91 over
  11; `name` ConflictNQ 0.79 over 117 (recall 0.037), RAMDocs 0.27; all three
  rules RAMDocs 0.47 at recall 0.52, ConflictNQ 0.80 at 0.041: still below the
  `copy` rule's RAMDocs precision (0.83), so they stay off.

Why the targets (ConflictNQ recall 0.2 at precision 0.7; RAMDocs 0.6 at 0.6)
are out of reach of these rules, measured: of ConflictNQ's 451 questions 225
ask for a typed slot (152 names, 56 dates, 17 numbers; the rest ask "what
is", "why", "difference"), and the real passage answers the slot in 87 of
them (it often does not name the question's entities). A group of the real passage and k
fakes counts 2/(k+1) of its pairs true, so precision 0.7 allows fewer than
two fakes a group: under 0.19 recall even if every typed question were found.
On RAMDocs (400 of 500 questions have 2-3 valid answers) linked slot pairs of
two correct documents are 82 of 149 (names), 89 of 176 (dates) and 9 of 17
(numbers): another valid answer reads as a contradiction.

Rejected, with figures (pairs linked, same data): `which` questions (HotpotQA
requests flagged 3.6% -> 7.0%, one more ConflictNQ pair); requiring an
entity word in the answering sentence (ConflictNQ 108 -> 103 linked pairs,
precision 0.77 -> 0.76, HotpotQA 3.6% -> 3.2%); spreading a flag to every
passage that repeats a flagged name (ConflictNQ recall 0.037 -> 0.067, but
groups of one real and many fakes: group precision falls); requiring the two
passages to share other names (same entity, not an ambiguous one: RAMDocs
date pairs correct/misinformation median overlap 0.25 against 0.07 for two
correct ones, but 87% of ConflictNQ real/fake name pairs share none, and names
do not separate: 0.02 against 0.03); yes/no slots (28 of 451 ConflictNQ
questions, none in RAMDocs: at most +0.06 recall); learned scorers (the ones
that helped leaned on passage length, an artifact of one dataset, and
flagged 38% of normal pairs).
"""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations

from packer.polarity import facets_apart
from packer.question import Question, SlotKind
from packer.records import STOPWORDS, Evidence, canonical_words
from packer.runtime import Memos
from packer.typed_claims import (
    Date,
    Name,
    Quantity,
    SentenceClaims,
)

Value = Quantity | Date | Name


def _same_value(a: Value, b: Value) -> bool:
    """Dates: compatible to their precision; numbers: the same unit and within 1%
    ("3.5 million" is "3,512,000" rounded); names: a word in common ("Sullivan" is
    "John Sullivan")."""
    if isinstance(a, Name) or isinstance(b, Name):
        return isinstance(a, Name) and isinstance(b, Name) and not set(a.words).isdisjoint(b.words)
    if isinstance(a, Date) or isinstance(b, Date):
        return isinstance(a, Date) and isinstance(b, Date) and a.compatible(b)
    return a.unit == b.unit and abs(a.value - b.value) <= 0.01 * max(abs(a.value), abs(b.value))


def _values(
    claims: SentenceClaims, slot: SlotKind, not_answers: frozenset[str]
) -> tuple[Value, ...]:
    """The sentence's values of the slot's type; for names, those holding none of
    `not_answers` (the question's words: the entities it asks about)."""
    if slot == "name":
        return tuple(n for n in claims.named if not_answers.isdisjoint(n.words))
    return claims.numbers if slot == "number" else claims.dates


@dataclass(frozen=True, slots=True)
class _Answer:
    """A passage's value for the question's slot, and every value of that type it states."""

    index: int
    value: Value
    stated: tuple[Value, ...]


def _answer(
    index: int,
    record: Evidence,
    slot: SlotKind,
    entities: frozenset[str],
    cues: frozenset[str],
    memos: Memos,
) -> _Answer | None:
    """The passage's answer to the slot: in the whole sentence stating a value of the
    slot's type that shares the most question words (two at least, or all there
    are), the value nearest one of them. None unless the passage names every
    entity word (checked first on its canonical words: the passages that do not
    are not read further, unless a lower-case question needed every passage's
    names). Rejected: naming half the entity words (RAMDocs date
    precision 0.35 -> 0.25), and the sentence's first value (it answered with
    "800 males" where the population was asked). A name is no answer when it
    holds a question word or a word of the passage's title (its own subject:
    "Winner" in "Winner (band)"), and every word the passage writes counts as
    stated (a name "appears" in a passage that writes any of its words).
    """
    words = record.facts.canonical_words
    if not entities or not entities.issubset(words):
        return None
    claims = memos.typed_claims(record.text)
    title = canonical_words(record.candidate.title or "") if slot == "name" else ()
    not_answers = cues.union(title)
    shared = [
        (sum(w in cues for w in c.words), c)
        for c in claims
        if c.complete and _values(c, slot, not_answers)
    ]
    most, best = max(shared, key=lambda s: s[0], default=(0, None))
    if best is None or most < min(2, len(cues)):
        return None
    where = [i for i, w in enumerate(best.words) if w in cues]
    value = min(_values(best, slot, not_answers), key=lambda v: min(abs(v.at - i) for i in where))
    if slot == "name":
        return _Answer(index, value, (Name(tuple(sorted(set(words) - STOPWORDS))),))
    return _Answer(index, value, tuple(v for c in claims for v in _values(c, slot, cues)))


def _bucket(value: Value) -> str:
    if isinstance(value, Quantity):
        return f"number:{value.unit}"
    return "date" if isinstance(value, Date) else "name"


RULE_SLOTS: dict[str, tuple[SlotKind, ...]] = {"slot": ("number", "date"), "name": ("name",)}
"""The slots each conflict rule of the config compares. Names are a rule of their own:
measured weaker than numbers and dates (see the module docstring)."""


def entity_terms(question: Question, named: Iterable[frozenset[str]]) -> frozenset[str]:
    """The question's words a passage must name to be about the same thing: the
    content words it writes as names, or, in a question written in lower case,
    those the passages (`named`: their names) write as names; never the words
    that only say which kind of value is asked for. Rejected: every content word
    ("built", "lose" in "when did the emperor lose power": fakes reword them)."""
    terms = question.terms - question.slot_words
    asked = question.names & terms
    return asked or terms.intersection(*[frozenset().union(*named)])


def slot_conflicts(
    records: list[Evidence], question: Question, memos: Memos, rules: tuple[str, ...]
) -> list[tuple[int, int, SlotKind]]:
    """Pairs of passages of different documents that answer the question's slot with
    different values, neither stated by the other (`packer.typed_claims`), when
    one of the configured `rules` compares that slot (`RULE_SLOTS`).

    Pair search: each passage gives at most one answer; answers are bucketed by
    slot kind and unit, and inside a bucket grouped by value, so passages that
    agree are never compared. Cost: O(n) claim look-ups (memoized per text)
    plus O(n·k) comparisons for k distinct answer values in a bucket, linear
    in candidates for the few values a question's passages give. Rejected:
    every pair (quadratic), and comparing every number of two passages
    (flags the other numbers passages state beside the answer).
    """
    slots = {s for r in rules for s in RULE_SLOTS.get(r, ())}
    slot = question.slot if slots else None
    if slot not in slots:
        return []
    cues = question.terms
    entities = entity_terms(
        question, (c.names for r in records for c in memos.typed_claims(r.text))
    )
    buckets: dict[str, list[list[_Answer]]] = defaultdict(list)
    for index, record in enumerate(records):
        answer = _answer(index, record, slot, entities, cues, memos)
        if answer is None:
            continue
        groups = buckets[_bucket(answer.value)]
        same = next((g for g in groups if _same_value(g[0].value, answer.value)), None)
        if same is None:
            groups.append([answer])
        else:
            same.append(answer)
    pairs = []
    for groups in buckets.values():
        for first, second in combinations(groups, 2):
            for p in first:
                for q in second:
                    a, b = records[p.index], records[q.index]
                    if (
                        a.document_id != b.document_id
                        and not facets_apart(a, b)
                        and not any(_same_value(p.value, v) for v in q.stated)
                        and not any(_same_value(q.value, v) for v in p.stated)
                    ):
                        pairs.append((min(p.index, q.index), max(p.index, q.index), slot))
    return pairs


def conflict_groups(
    pairs: dict[tuple[str, str], set[str]],
) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """The maximal cliques of the disagreeing pairs (each group sorted, the list sorted)
    and, for each, the rules that linked its members, sorted.

    A group is passages that each disagree with every other one: two copies that each
    disagree with one original, and agree with each other (two edits to one value), are
    two groups with the original, not one group claiming they contradict each other.
    Rejected: connected components (7 of RAMDocs' 43 falsely flagged pairs, and 3 of
    ConflictNQ's 6, were members only joined through a shared partner: two copies of
    one value, or three fakes beside the real passage). A member may now sit in two
    groups (an original beside two edits); each group is admitted as a pair by itself.
    """
    linked: dict[str, set[str]] = defaultdict(set)
    rules: dict[frozenset[str], set[str]] = defaultdict(set)
    for (a, b), found_by in pairs.items():
        linked[a].add(b)
        linked[b].add(a)
        rules[frozenset((a, b))] |= found_by
    cliques: list[tuple[str, ...]] = []
    _cliques(linked, set(), set(linked), set(), cliques)
    groups = sorted(
        (
            tuple(sorted(c)),
            tuple(sorted(set().union(*(rules[frozenset(p)] for p in combinations(c, 2))))),
        )
        for c in cliques
    )
    return [g for g, _ in groups], [k for _, k in groups]


def _cliques(
    linked: dict[str, set[str]],
    clique: set[str],
    candidates: set[str],
    excluded: set[str],
    out: list[tuple[str, ...]],
) -> None:
    """Bron-Kerbosch with a pivot: every maximal clique of `linked` extending `clique`."""
    if not candidates and not excluded:
        out.append(tuple(clique))
        return
    pivot = max(sorted(candidates | excluded), key=lambda v: len(linked[v] & candidates))
    for v in sorted(candidates - linked[pivot]):
        _cliques(linked, clique | {v}, candidates & linked[v], excluded & linked[v], out)
        candidates = candidates - {v}
        excluded = excluded | {v}
