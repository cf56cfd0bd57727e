"""Reprints and disagreeing copies across documents.

Two passages of different documents whose canonical words mostly agree, in
order (`reprint_similarity`), and whose differences are only function words
("has", "the": wording, not content; never a modal or a negation) are copies
of one report: the lower-ranked one folds into the other's `derived_from`.
When a fact on one side was replaced by a different fact on the other, and
they share at least `conflict_similarity` of their words, or their stance
changed ("must" for "may", "not" added, "$" for "€"), or a near copy swaps a
few content words ("a forward" for "a defender"), they disagree: both stay and
are flagged as a conflict (rule `copy`). Passages tagged with disjoint facets
are about different things and never conflict. Only pairs that open with
enough of the same words are compared whole (`_candidate_pairs`). Rejected:
comparing lowercase word skeletons only, which missed every conflict whose
sentences hold names, and flagged formatting variants ("4,000" / "4000") as
disagreements.
"""

from collections import defaultdict
from difflib import SequenceMatcher
from typing import Literal

import numpy as np

from packer.equivalence import censored, other_text, same_fact, without_moves
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
from schemas import DedupConfig

Verdict = Literal["reprint", "conflict"]


Stretch = tuple[list[str], list[str], tuple[list[str], list[str], list[str], list[str]]]
"""A differing stretch of two word sequences: (left, right, context: the words just before
and after it on the left, then on the right)."""


def _differences(a: list[str], b: list[str], least: float = 0.0) -> tuple[float, list[Stretch]]:
    """How much of the two word sequences agree, in order, and the differing stretches
    with two words of context before and three after (a currency, a scale and a unit).

    Sequences whose shared words alone (difflib's `quick_ratio`, an upper bound
    of the ratio) fall below `least` are not aligned: (that bound, no stretches).
    """
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    bound = matcher.quick_ratio()
    if bound < least:
        return bound, []
    diffs = [
        (
            a[i1:i2],
            b[j1:j2],
            (a[max(0, i1 - 2) : i1], a[i2 : i2 + 3], b[max(0, j1 - 2) : j1], b[j2 : j2 + 3]),
        )
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]
    return matcher.ratio(), diffs


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
    defender", "red lantern" for "yellow lantern"."""
    return (
        0 < len(left) <= SWAP_WORDS
        and 0 < len(right) <= SWAP_WORDS
        and not _FUNCTION_WORDS.issuperset(left)
        and not _FUNCTION_WORDS.issuperset(right)
    )


def compare_copies(a: Evidence, b: Evidence, config: DedupConfig) -> Verdict | None:
    """Whether two passages of different documents are a reprint, a conflict, or neither.

    A conflict is a fact replaced by another (a number, a date, a name) or a
    stance changed (`_stance_changed`); a reprint differs in wording only.
    """
    wa = [MONTHS.get(w, w) for w in a.canonical.split()]
    wb = [MONTHS.get(w, w) for w in b.canonical.split()]
    if (
        not wa
        or not wb
        or 2 * min(len(wa), len(wb)) < config.conflict_similarity * (len(wa) + len(wb))
    ):
        return None  # too different in length to share that much
    ratio, diffs = _differences(wa, wb, config.conflict_similarity)
    if ratio < config.conflict_similarity:
        return None
    facts_a, facts_b = fact_words(a.text), fact_words(b.text)
    replaced = extra = swapped = False
    for left, right, context in without_moves(diffs):  # "12 km (7.5 miles)" reordered
        named = facts_a.issuperset(left) and facts_b.issuperset(right)
        if same_fact(left, right, context, named) or censored(left, right, a.text, b.text):
            continue  # "5 km" for "3.1 miles", "us" for "united states", "d***": one fact
        fact_left = any(w in facts_a for w in left)
        fact_right = any(w in facts_b for w in right)
        if fact_left and fact_right and _names_subject(a, left) and _names_subject(b, right):
            return None  # "2012–13 ... team" beside "2013–14 ... team": two subjects
        if other_text(left, right, context):
            extra = True  # rewritten, or cut at different places: not a fact replaced
            continue
        if (fact_left and fact_right) or _stance_changed(left, right):
            replaced = True
        elif fact_left or fact_right or not _FUNCTION_WORDS.issuperset(left + right):
            extra = True  # a fact or a content word one side has: not the same report
            swapped |= _content_swap(left, right)
    if replaced or (swapped and ratio >= config.reprint_similarity):
        if a.facets and b.facets and set(a.facets).isdisjoint(b.facets):
            return None  # about different required facets: not the same question
        return "conflict"
    if not extra and ratio >= config.reprint_similarity:
        return "reprint"
    return None


def _candidate_pairs(records: list[Evidence]) -> list[tuple[int, int]]:
    """Pairs (i < j, ascending) of different documents that share enough opening
    content words (`_needed`) to be compared whole.

    Up to `PAIRWISE` records, every pair's opening words are intersected
    directly. Beyond, a word most records open with says nothing about a pair:
    a word in more than a quarter of them (and 16) is not counted. Each counted
    word gives the pairs of the records it opens, generated in numpy a posting
    length at a time and counted by one sort (`np.unique`): O(n·w) Python to
    list the n records' w opening words, plus O(P log P) in C for the P
    word-sharing pairs; Python touches only the pairs that pass. Rejected:
    counting the pairs in a Python `Counter` and sorting them (85% of the
    packing time at 1,000 candidates: ~100,000 pairs a request); a scipy
    sparse product (the same counts, ~1 ms of fixed cost a request); numpy for
    a few records (its fixed cost is above the pairwise loop's); MinHash-banding
    the openings (it misses some pairs that share enough, so prompts would change).
    """
    words = [set(r.facts.content) for r in records]
    needed = [_needed(len(w)) for w in words]
    if len(records) <= PAIRWISE:
        return _pairwise(words, needed, [r.document_id for r in records])
    postings: dict[str, list[int]] = defaultdict(list)
    for i, opening in enumerate(words):
        for word in opening:
            postings[word].append(i)
    widest = max(16, len(records) // 4)
    by_length: dict[int, list[list[int]]] = defaultdict(list)
    for posting in postings.values():
        if 2 <= len(posting) <= widest:
            by_length[len(posting)].append(posting)
    if not by_length:
        return []
    codes = []
    for length, group in by_length.items():
        opened = np.array(group, dtype=np.int64)  # a row per word: its records, ascending
        left, right = np.triu_indices(length, 1)
        codes.append((opened[:, left] * len(records) + opened[:, right]).ravel())
    pair_codes, shared = np.unique(np.concatenate(codes), return_counts=True)  # sorted
    first, second = np.divmod(pair_codes, len(records))
    documents = np.unique([r.document_id for r in records], return_inverse=True)[1]
    least = np.array(needed)
    passes = (shared >= np.minimum(least[first], least[second])) & (
        documents[first] != documents[second]
    )
    return list(zip(first[passes].tolist(), second[passes].tolist(), strict=True))


PAIRWISE = 24
"""Up to this many records, every pair's opening words are intersected directly."""


def _pairwise(words: list[set[str]], needed: list[float], docs: list[str]) -> list[tuple[int, int]]:
    """Every pair (i < j) of different documents sharing enough of their `words`: the
    first record's facts held while its partners are scanned (a third less time
    than indexing both per pair)."""
    pairs = []
    for i, (mine, least, doc) in enumerate(zip(words, needed, docs, strict=True)):
        for j in range(i + 1, len(words)):
            if docs[j] != doc and len(mine & words[j]) >= min(least, needed[j]):
                pairs.append((i, j))
    return pairs


def _needed(size: int) -> float:
    """The opening content words a record of `size` of them must share with another
    for the two to be compared whole; a pair needs the smaller of its two sides'
    (`max(2, 0.4 * the smaller size)`). Stopwords are left out of both the sizes and
    the shared words. Rejected: counting stopwords in the sizes only, which kept a
    short passage with a two-word edit ("4,000²" for "4,0002") from ever being
    compared with its original."""
    return max(2, 0.4 * size)


def fold_reprints(
    records: list[Evidence], config: DedupConfig, fold: bool
) -> tuple[list[Evidence], list[Evidence], list[tuple[str, str]]]:
    """Fold reprints into their best-ranked copy (when `fold`) and find disagreeing copies.

    `records` are in rank order. Returns (kept, folded, conflict pairs of the
    kept, by id: a folded record stands for its keeper).
    """
    folded_into: dict[int, int] = {}
    conflict_pairs: list[tuple[int, int]] = []
    for i, j in _candidate_pairs(records):
        verdict = compare_copies(records[i], records[j], config)
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
