"""Deduplication inside safe identity boundaries, reprints, and conflict detection.

- exact: the same canonical text (`records.canonical_words`: case, punctuation,
  number formats, wire datelines and bylines ignored) anywhere in the tenant's
  request; the best-ranked record stays and folds the others into
  `derived_from` (distinct publications stay citable).
- overlap: overlapping spans of the same document revision and section merge
  into one record over the union span.
- near: MinHash similarity, only inside one document revision: the lower-ranked
  chunk folds into the better one's `derived_from`.
- reprint and conflict, across documents: two passages whose canonical words
  mostly agree, in order (`reprint_similarity`), and whose differences are
  only function words ("has", "will", "the": wording, not content) are copies
  of one report: the lower-ranked one folds into the other's `derived_from`.
  When a fact on one side was replaced by a different fact on the other, and
  they share at least `conflict_similarity` of their words, they disagree: both
  stay and are flagged as a conflict. Passages tagged with disjoint facets are
  about different things and never conflict. Rejected: comparing lowercase
  word skeletons only, which missed every conflict whose sentences hold names,
  and flagged formatting variants ("4,000" / "4000") as disagreements.
"""

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from itertools import combinations
from typing import Literal

from datasketch import MinHash

from packer.records import MONTHS, STOPWORDS, Evidence, fact_words
from packer.runtime import Memos
from packer.sketch import lsh_index, sketch
from schemas import DedupConfig, ExclusionReason

R = ExclusionReason


@dataclass(slots=True)
class Deduplicated:
    """What dedup kept, what it folded (by id, with the reason its fate carries), and the
    conflict groups among the kept. Nothing is dropped: every copy folds into a keeper
    and shares its fate."""

    kept: list[Evidence]
    folded_reason: dict[str, ExclusionReason] = field(default_factory=dict)
    conflicts: list[tuple[str, ...]] = field(default_factory=list)


def _best_first(records: list[Evidence]) -> list[Evidence]:
    return sorted(records, key=Evidence.rank_key)


def _fold(keeper: Evidence, other: Evidence) -> None:
    keeper.derived_from.append(other.evidence_id)
    keeper.derived_from.extend(other.derived_from)
    keeper.facets = tuple(sorted(set(keeper.facets) | set(other.facets)))


def dedup_exact(records: list[Evidence]) -> tuple[list[Evidence], list[Evidence]]:
    """Fold exact duplicates (canonical text) into the best-ranked copy.

    Returns (kept, folded); folded records reach the prompt only through their keeper.
    """
    keepers: dict[str, Evidence] = {}
    kept: list[Evidence] = []
    folded: list[Evidence] = []
    for record in _best_first(records):
        keeper = keepers.get(record.canonical)
        if keeper is None:
            keepers[record.canonical] = record
            kept.append(record)
        else:
            _fold(keeper, record)
            folded.append(record)
    return kept, folded


def _mergeable(record: Evidence) -> bool:
    span = record.span
    return span is not None and span[1] - span[0] == len(record.text)


def _merge_pair(left: Evidence, right: Evidence, memos: Memos) -> Evidence | None:
    """Merge `right` into `left` (left starts first) if their overlap agrees."""
    assert left.span is not None and right.span is not None
    l_start, l_end = left.span
    r_start, r_end = right.span
    overlap = left.text[r_start - l_start :]
    if not right.text.startswith(overlap[: r_end - r_start]):
        return None
    text = left.text + right.text[len(overlap) :] if r_end > l_end else left.text
    keeper, other = (left, right) if left.rank_key() <= right.rank_key() else (right, left)
    keeper.text = text
    keeper.facts = memos.text_facts(text)
    keeper.span = (l_start, max(l_end, r_end))
    keeper.score = max(left.score, right.score)
    _fold(keeper, other)
    return other


def merge_overlaps(records: list[Evidence], memos: Memos) -> tuple[list[Evidence], list[Evidence]]:
    """Merge overlapping spans of one document revision and section.

    Spans that only touch or leave a gap stay separate; so do spans whose
    overlapping text disagrees (those are left to near-duplicate detection).
    Returns (kept, merged away).
    """
    groups: dict[tuple[str, str, str | None], list[Evidence]] = defaultdict(list)
    kept: list[Evidence] = []
    for record in records:
        if _mergeable(record):
            key = (record.document_id, record.revision_id, record.candidate.section)
            groups[key].append(record)
        else:
            kept.append(record)
    merged_away: list[Evidence] = []
    for group in groups.values():
        group.sort(key=lambda r: (r.span[0], -r.span[1], r.evidence_id))  # type: ignore[index]
        current = group[0]
        for record in group[1:]:
            assert current.span is not None and record.span is not None
            if record.span[0] < current.span[1]:
                loser = _merge_pair(current, record, memos)
                if loser is not None:
                    merged_away.append(loser)
                    current = record if loser is current else current
                    continue
            kept.append(current)
            current = record
        kept.append(current)
    return kept, merged_away


def fold_near_duplicates(
    records: list[Evidence], config: DedupConfig, memos: Memos
) -> tuple[list[Evidence], list[Evidence]]:
    """Fold near-duplicates within each document revision into the best-ranked copy.

    Candidates are found with MinHash LSH per revision (never pairwise across the
    request), then confirmed by the estimated Jaccard similarity. The index's
    bands and the sketches' permutations come from the worker's memos
    (`packer.sketch`): they depend on the config alone.
    """
    groups: dict[tuple[str, str], list[Evidence]] = defaultdict(list)
    for record in records:
        groups[(record.document_id, record.revision_id)].append(record)
    kept: list[Evidence] = []
    folded: list[Evidence] = []
    threshold, permutations = config.near_duplicate_threshold, config.minhash_permutations
    for group in groups.values():
        if len(group) == 1:
            kept.extend(group)
            continue
        lsh = lsh_index(threshold, permutations, memos.lsh_bands(threshold, permutations))
        blank = memos.blank_sketch(permutations)
        hashes: dict[str, tuple[MinHash, Evidence]] = {}
        for record in _best_first(group):
            mh = sketch(record.canonical, config.shingle_words, blank)
            similar = [k for k in lsh.query(mh) if hashes[k][0].jaccard(mh) >= threshold]
            if similar:
                _fold(hashes[min(similar)][1], record)
                folded.append(record)
                continue
            lsh.insert(record.evidence_id, mh)
            hashes[record.evidence_id] = (mh, record)
            kept.append(record)
    return kept, folded


Verdict = Literal["reprint", "conflict"]


def _differences(
    a: list[str], b: list[str], least: float = 0.0
) -> tuple[float, list[tuple[list[str], list[str]]]]:
    """How much of the two word sequences agree, in order, and the differing stretches.

    Sequences whose shared words alone (difflib's `quick_ratio`, an upper bound
    of the ratio) fall below `least` are not aligned: (that bound, no stretches).
    """
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    bound = matcher.quick_ratio()
    if bound < least:
        return bound, []
    diffs = [
        (a[i1:i2], b[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
    ]
    return matcher.ratio(), diffs


def _initials(words: list[str]) -> str:
    return "".join(w[0] for w in words)


_FUNCTION_WORDS = STOPWORDS | frozenset(
    ("has", "have", "had", "will", "would", "shall", "should", "can", "could", "may", "might",
     "must", "been", "being", "be", "am", "do", "done", "said", "says", "also", "then", "than",
     "so", "but", "just")
)  # fmt: skip
"""Words a reprint may add, drop or swap: they change the wording, not what is reported."""


def compare_copies(a: Evidence, b: Evidence, config: DedupConfig) -> Verdict | None:
    """Whether two passages of different documents are a reprint, a conflict, or neither."""
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
    replaced = extra = False
    for left, right in diffs:
        if len(left) == 1 and len(right) > 1 and left[0] == _initials(right):
            continue  # "us" for "united states": one name spelled two ways
        if len(right) == 1 and len(left) > 1 and right[0] == _initials(left):
            continue
        fact_left = any(w in facts_a for w in left)
        fact_right = any(w in facts_b for w in right)
        if fact_left and fact_right:
            replaced = True
        elif fact_left or fact_right or not _FUNCTION_WORDS.issuperset(left + right):
            extra = True  # a fact or a content word one side has: not the same report
    if replaced:
        if a.facets and b.facets and set(a.facets).isdisjoint(b.facets):
            return None  # about different required facets: not the same question
        return "conflict"
    if not extra and ratio >= config.reprint_similarity:
        return "reprint"
    return None


def _candidate_pairs(records: list[Evidence]) -> list[tuple[int, int]]:
    """Pairs of different documents that share enough opening words to be compared.

    A few records are compared pairwise; more go through an inverted index over
    their opening words (common words and words most records share left out),
    which keeps this near linear in the records.
    """
    if len(records) <= PAIRWISE:
        words = [set(r.facts.opening).difference(STOPWORDS) for r in records]
        return [
            (i, j)
            for i, j in combinations(range(len(records)), 2)
            if records[i].document_id != records[j].document_id
            and _shares_enough(records[i], records[j], len(words[i] & words[j]))
        ]
    postings: dict[str, list[int]] = defaultdict(list)
    for i, record in enumerate(records):
        for word in record.facts.opening:
            if word not in STOPWORDS:
                postings[word].append(i)
    widest = max(16, len(records) // 4)
    shared: Counter[tuple[int, int]] = Counter()
    for indices in postings.values():
        if 2 <= len(indices) <= widest:
            shared.update(combinations(indices, 2))
    return [
        (i, j)
        for (i, j), n in sorted(shared.items())
        if records[i].document_id != records[j].document_id
        and _shares_enough(records[i], records[j], n)
    ]


PAIRWISE = 24
"""Up to this many records, every pair's opening words are intersected directly."""


def _shares_enough(a: Evidence, b: Evidence, shared: int) -> bool:
    """Enough opening words in common to compare two passages whole."""
    return shared >= max(2, 0.4 * min(len(a.facts.opening), len(b.facts.opening)))


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
            _fold(records[keeper], record)
            folded.append(record)
    pairs = [
        (records[folded_into.get(i, i)].evidence_id, records[folded_into.get(j, j)].evidence_id)
        for i, j in conflict_pairs
    ]
    return kept, folded, [(a, b) for a, b in pairs if a != b]


def conflict_groups(pairs: list[tuple[str, str]]) -> list[tuple[str, ...]]:
    """Connected components of the disagreeing pairs: each group sorted, the list sorted."""
    parent: dict[str, str] = {}

    def root(e: str) -> str:
        while parent.get(e, e) != e:
            e = parent[e]
        return e

    for a, b in pairs:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    members: dict[str, set[str]] = defaultdict(set)
    for e in {e for pair in pairs for e in pair}:
        members[root(e)].add(e)
    return sorted(tuple(sorted(g)) for g in members.values() if len(g) > 1)


def deduplicate(
    records: list[Evidence], config: DedupConfig, memos: Memos, enabled: bool = True
) -> Deduplicated:
    """Every dedup level the config switches on, in order, then conflict detection
    (which runs with dedup switched off too). Records in any order.

    Rejected: flagging passages that answer the question's slot (`when`,
    `who`, ...) with different values. Measured on RAMDocs and ConflictNQ,
    such pairs were a true conflict (misinformation against a correct
    passage) only 29% and 39% of the time: correct passages about different
    entities, or different details, differ as much as a fake does.
    """
    levels = set(config.levels) if enabled else set()
    kept = sorted(records, key=Evidence.rank_key)
    out = Deduplicated(kept=kept)
    if "exact" in levels:
        kept, folded = dedup_exact(kept)
        out.folded_reason.update({r.evidence_id: R.DUPLICATE_EXACT for r in folded})
    if len({r.document_id for r in kept}) < len(kept):  # both need two of one document
        if "overlap" in levels:
            kept, merged = merge_overlaps(kept, memos)
            out.folded_reason.update({r.evidence_id: R.DUPLICATE_OVERLAP for r in merged})
        if "near" in levels:
            kept, near = fold_near_duplicates(kept, config, memos)
            out.folded_reason.update({r.evidence_id: R.DUPLICATE_NEAR for r in near})
        kept.sort(key=Evidence.rank_key)
    kept, reprints, pairs = fold_reprints(kept, config, fold="reprint" in levels)
    out.folded_reason.update({r.evidence_id: R.DUPLICATE_NEAR for r in reprints})
    out.kept, out.conflicts = kept, conflict_groups(pairs)
    return out
