"""Reprints and disagreeing copies across documents.

Two passages of different documents whose canonical words mostly agree, in
order (`reprint_similarity`), and whose differences are only function words
("has", "the": wording, not content; never a modal or a negation) are copies
of one report: the lower-ranked one folds into the other's `derived_from`.
When a fact on one side was replaced by a different fact on the other, and
they share at least `conflict_similarity` of their words, or their stance
changed ("must" for "may", "not" added, "$" for "€"), or a near copy swaps a
few content words ("a forward" for "a defender"), they disagree: both stay and
are flagged as a conflict (rule `copy`). For a question asking a number or a
date, the replaced fact must be one (`_answers_slot`): two labelled-correct
RAMDocs copies differing in a clan's name beside one population figure are two
reports, not a disagreement on what is asked. Passages tagged with disjoint facets
are about different things and never conflict. Only pairs that open with
enough of the same words are compared whole (`packer.reprint_pairs`). Rejected:
comparing lowercase word skeletons only, which missed every conflict whose
sentences hold names, and flagged formatting variants ("4,000" / "4000") as
disagreements.
"""

from collections import Counter
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Literal

from packer.equivalence import censored, other_text, same_fact, unrendered, without_moves
from packer.native import kernels
from packer.polarity import facets_apart
from packer.question import SlotKind
from packer.records import (
    MEANING_WORDS,
    MONTHS,
    STOPWORDS,
    SYMBOLS,
    Evidence,
    canonical_words,
    fact_words,
    fold_copy,
)
from packer.reprint_pairs import candidate_pairs
from schemas import DedupConfig

Verdict = Literal["reprint", "conflict"]


Stretch = tuple[list[str], list[str], tuple[list[str], list[str], list[str], list[str]]]
"""A differing stretch of two word sequences: (left, right, context: the words just before
and after it on the left, then on the right)."""


_MONTH_FORMS = MONTHS.keys()
"""The abbreviated month names a copy's words are mapped from (most copies hold none)."""


class _Copy:
    """What comparing copies reads of a record: its canonical words (month names
    spelled out) and, only for the pairs that get that far, its fact words. Made once
    a request per record: at thousands of candidates a record is in many candidate
    pairs, and re-deriving these per pair was half the time of comparing them."""

    def __init__(self, record: Evidence) -> None:
        self.record = record
        words = record.facts.canonical_words
        self.words = (
            list(words) if _MONTH_FORMS.isdisjoint(words) else [MONTHS.get(w, w) for w in words]
        )
        self._facts: frozenset[str] | None = None

    @property
    def facts(self) -> frozenset[str]:
        if self._facts is None:
            self._facts = fact_words(self.record.text)
        return self._facts


def _differences(a: _Copy, b: _Copy, least: float) -> tuple[float, list[Stretch]]:
    """How much of the two word sequences agree, in order, and the differing stretches
    with two words of context before and three after (a currency, a scale and a unit).

    Sequences whose shared words alone (difflib's `quick_ratio`, an upper bound
    of the ratio) fall below `least` are not aligned: (that bound, no stretches).
    The bound is counted before the sequences are aligned (`_shared_words`): most
    pairs stop there. Both are difflib's (`alignment`), in C when built. Rejected: the
    matcher's own `quick_ratio` (the same number, a Python loop over both sequences
    after indexing the second).
    """
    x, y = a.words, b.words
    length = len(x) + len(y)
    bound = 2.0 * _shared_words(x, y) / length if length else 1.0
    if bound < least:
        return bound, []
    matches, stretches = _alignment(x, y)
    diffs = [
        (
            x[i1:i2],
            y[j1:j2],
            (x[max(0, i1 - 2) : i1], x[i2 : i2 + 3], y[max(0, j1 - 2) : j1], y[j2 : j2 + 3]),
        )
        for i1, i2, j1, j2 in stretches
    ]
    return 2.0 * matches / length if length else 1.0, diffs  # difflib's ratio


def shared_words(a: Sequence[str], b: Sequence[str]) -> int:
    """How many words two sequences share, each as often as both hold it."""
    return sum((Counter(a) & Counter(b)).values())


_shared_words = kernels.shared_words if kernels else shared_words


def alignment(a: Sequence[str], b: Sequence[str]) -> tuple[int, list[tuple[int, int, int, int]]]:
    """How many words two sequences share in order, and the stretches (i1, i2, j1, j2)
    where they differ: difflib's matching blocks and opcodes, no junk."""
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    matches = sum(block.size for block in matcher.get_matching_blocks())
    return matches, [op[1:] for op in matcher.get_opcodes() if op[0] != "equal"]


_alignment = kernels.alignment if kernels else alignment


_FUNCTION_WORDS = (
    STOPWORDS
    | frozenset(
        ("has", "have", "had", "been", "being", "be", "am", "do", "done", "said", "says", "also",
         "then", "than", "so", "but", "just")
    )
) - MEANING_WORDS  # fmt: skip
"""Words a reprint may add, drop or swap: they change the wording, not what is reported.
Modal and negation words are not among them ("will" is a stopword, not wording)."""


def _stance(words: list[str]) -> list[str]:
    return [w for w in words if w in MEANING_WORDS or w[0] in SYMBOLS]


def _stance_changed(left: list[str], right: list[str]) -> bool:
    """A differing stretch of wording and stance words only, whose stance words differ:
    "must" for "may", "not" added, "$" for "€", "%" dropped. The same report with
    another stance (a changed number is a replaced fact, not a stance)."""
    stance_left, stance_right = _stance(left), _stance(right)
    return stance_left != stance_right and _FUNCTION_WORDS.issuperset(
        w for w in left + right if w[0] not in SYMBOLS and w not in MEANING_WORDS
    )


def _names_subject(record: Evidence, words: list[str]) -> bool:
    """Some of the differing words are in the record's title: they name what the
    passage is about, so a passage with other words there is about something else
    (templated articles: seasons, editions, years). Rejected: dropping every pair
    of similar passages with different titles (a reprint keeps a fact under
    another headline)."""
    title = record.candidate.title
    return bool(title) and not set(words).isdisjoint(canonical_words(title))  # type: ignore[arg-type]


SWAP_WORDS = 3
"""At most this many content words on each side of a swap."""


def _content_swap(left: list[str], right: list[str]) -> bool:
    """A few content words put in the place of a few others: "a forward" for "a
    defender", "red lantern" for "yellow lantern". A side of single letters is an
    abbreviation or an initial (`c.` for circa beside a `(chef)` heading), not a word."""
    return (
        0 < len(left) <= SWAP_WORDS
        and 0 < len(right) <= SWAP_WORDS
        and _has_content(left)
        and _has_content(right)
    )


def _has_content(words: list[str]) -> bool:
    return any(len(w) > 1 and w not in _FUNCTION_WORDS for w in words)


def compare_copies(
    a: Evidence, b: Evidence, config: DedupConfig, slot: SlotKind | None = None
) -> Verdict | None:
    """Whether two passages of different documents are a reprint, a conflict, or neither,
    for a question asking a value of kind `slot` (None: any question, or none)."""
    return _compare(_Copy(a), _Copy(b), config, slot)


MONTH_NAMES = frozenset(MONTHS.values())
_FIGURES = frozenset("0123456789")


def _holds_number(words: list[str]) -> bool:
    """A word with a figure in it (a superscript is a unit's, `km²`, not a figure)."""
    return any(not _FIGURES.isdisjoint(w) for w in words)


def _holds_date(words: list[str]) -> bool:
    return _holds_number(words) or not MONTH_NAMES.isdisjoint(words)


_SLOT_VALUE = {"number": _holds_number, "date": _holds_date}
"""Whether a stretch of words holds a value of the slot's kind."""


def _answers_slot(left: list[str], right: list[str], slot: SlotKind | None) -> bool:
    """Whether a replaced fact can be the question's answer: for a question asking a
    number or a date, both sides of the stretch hold one ("Borena" for "Garre" beside
    the same population figure is a difference the question does not ask about). A
    name question, or one of no known slot, takes any replaced fact. Rejected: the
    replaced value's nearness to the question's words (a census table's density row
    names "population"; the count's own row, "there were 1,791 people", does not)."""
    holds = _SLOT_VALUE.get(slot or "")
    return holds is None or (holds(left) and holds(right))


def _compare(
    copy_a: _Copy, copy_b: _Copy, config: DedupConfig, slot: SlotKind | None = None
) -> Verdict | None:
    """`compare_copies` over what it reads of each record.

    A conflict is a fact replaced by another (a number, a date, a name) or a
    stance changed (`_stance_changed`); a reprint differs in wording only. For a
    question asking a number or a date, only a replaced value of that kind (or a
    stance changed) is a disagreement; other replaced facts are other content.
    """
    a, b = copy_a.record, copy_b.record
    wa, wb = copy_a.words, copy_b.words
    if (
        not wa
        or not wb
        or 2 * min(len(wa), len(wb)) < config.conflict_similarity * (len(wa) + len(wb))
    ):
        return None  # too different in length to share that much
    ratio, diffs = _differences(copy_a, copy_b, config.conflict_similarity)
    if ratio < config.conflict_similarity:
        return None
    facts_a, facts_b = copy_a.facts, copy_b.facts
    replaced = extra = swapped = False
    for left, right, context in without_moves(diffs):  # "12 km (7.5 miles)" reordered
        named = facts_a.issuperset(left) and facts_b.issuperset(right)
        if same_fact(left, right, context, named) or censored(left, right, a.text, b.text):
            continue  # "5 km" for "3.1 miles", "us" for "united states", "d***": one fact
        fact_left = any(w in facts_a for w in left)
        fact_right = any(w in facts_b for w in right)
        if fact_left and fact_right and _names_subject(a, left) and _names_subject(b, right):
            return None  # "2012–13 ... team" beside "2013–14 ... team": two subjects
        if other_text(left, right, context) or unrendered(left) or unrendered(right):
            extra = True  # rewritten, cut at different places, a template: no fact replaced
            continue
        if _stance_changed(left, right) or (
            fact_left and fact_right and _answers_slot(left, right, slot)
        ):
            replaced = True
        elif fact_left or fact_right or not _FUNCTION_WORDS.issuperset(left + right):
            extra = True  # a fact or a content word one side has: not the same report
            swapped |= slot not in _SLOT_VALUE and _content_swap(left, right)
    if replaced or (swapped and ratio >= config.reprint_similarity):
        if facets_apart(a, b):
            return None  # about different required facets: not the same question
        return "conflict"
    if not extra and ratio >= config.reprint_similarity:
        return "reprint"
    return None


def fold_reprints(
    records: list[Evidence], config: DedupConfig, fold: bool, slot: SlotKind | None = None
) -> tuple[list[Evidence], list[Evidence], list[tuple[str, str]]]:
    """Fold reprints into their best-ranked copy (when `fold`) and find disagreeing copies
    (for a question asking a value of kind `slot`).

    `records` are in rank order. Returns (kept, folded, conflict pairs of the
    kept, by id: a folded record stands for its keeper).
    """
    folded_into: dict[int, int] = {}
    conflict_pairs: list[tuple[int, int]] = []
    copies: dict[int, _Copy] = {}
    for i, j in candidate_pairs(records):
        for k in (i, j):
            if k not in copies:
                copies[k] = _Copy(records[k])
        verdict = _compare(copies[i], copies[j], config, slot)
        if verdict == "conflict":
            conflict_pairs.append((i, j))
        elif verdict == "reprint" and fold and j not in folded_into:
            folded_into[j] = folded_into.get(i, i)
    kept, folded = [], []
    for index, record in enumerate(records):
        keeper = folded_into.get(index)
        if keeper is None:
            kept.append(record)
        else:
            fold_copy(records[keeper], record)
            folded.append(record)
    pairs = [
        (records[folded_into.get(i, i)].evidence_id, records[folded_into.get(j, j)].evidence_id)
        for i, j in conflict_pairs
    ]
    return kept, folded, [(a, b) for a, b in pairs if a != b]
