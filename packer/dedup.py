"""Deduplication inside safe identity boundaries, reprints, and conflict detection.

- exact: the same canonical text (`records.canonical_words`: case, punctuation,
  number formats, wire datelines and bylines ignored; signs, currencies, %,
  operators, superscripts, modal and negation words kept) anywhere in the
  tenant's request; the best-ranked record stays and folds the others into
  `derived_from` (distinct publications stay citable).
- overlap and adjacent: overlapping (or, level `adjacent`, contiguous) spans of
  the same document revision, section and effective date merge into one record
  over the union span.
- near: MinHash similarity, only inside one document revision: the lower-ranked
  chunk folds into the better one's `derived_from`.
- reprint and conflict, across documents (`packer.reprints`): copies of one
  report fold into the best-ranked; copies with a fact or stance changed
  stay and are flagged as a conflict (rule `copy`). The opt-in `slot` rule
  (`slot_conflicts`) compares typed answers to the question across documents.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations

from datasketch import MinHash

from packer.records import (
    Evidence,
    fold_copy,
    meaning_marks,
    question_terms,
)
from packer.reprints import fold_reprints
from packer.runtime import Memos
from packer.sketch import lsh_index, sketch
from packer.typed_claims import (
    Date,
    Quantity,
    SentenceClaims,
    SlotKind,
    entity_terms,
    question_slot,
)
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
    conflict_kinds: list[tuple[str, ...]] = field(default_factory=list)
    """Per conflict group, the rules that found it: `copy`, `number`, `date`."""


def _best_first(records: list[Evidence]) -> list[Evidence]:
    return sorted(records, key=Evidence.rank_key)


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
            fold_copy(keeper, record)
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
    fold_copy(keeper, other)
    return other


def merge_spans(
    records: list[Evidence], memos: Memos, overlap: bool, adjacent: bool
) -> tuple[list[Evidence], dict[str, ExclusionReason]]:
    """Merge overlapping (`overlap`) or contiguous (`adjacent`) spans of one document
    revision, section and effective date: seed 002's conditions for a merge (the
    tenant and authorization domain are the document's).

    The merged record keeps the best-ranked id, the others in `derived_from`,
    the exact union span, and its text's facts (hash, words) recomputed; its
    tokens are counted afresh as any block's. Spans that leave a gap stay
    separate; so do spans whose overlapping text disagrees (those are left to
    near-duplicate detection). Returns (kept, merged away id -> reason:
    `duplicate_overlap` or `merged_adjacent`). Rejected: merging touching
    spans of different sections, whose texts only happen to meet.
    """
    groups: dict[tuple[str, str, str | None, object], list[Evidence]] = defaultdict(list)
    kept: list[Evidence] = []
    for record in records:
        if _mergeable(record):
            key = (record.document_id, record.revision_id, record.candidate.section,
                   record.effective_at)  # fmt: skip
            groups[key].append(record)
        else:
            kept.append(record)
    merged_away: dict[str, ExclusionReason] = {}
    for group in groups.values():
        group.sort(key=lambda r: (r.span[0], -r.span[1], r.evidence_id))  # type: ignore[index]
        current = group[0]
        for record in group[1:]:
            assert current.span is not None and record.span is not None
            touching = record.span[0] == current.span[1]
            if (overlap and record.span[0] < current.span[1]) or (adjacent and touching):
                loser = _merge_pair(current, record, memos)
                if loser is not None:
                    merged_away[loser.evidence_id] = (
                        R.MERGED_ADJACENT if touching else R.DUPLICATE_OVERLAP
                    )
                    current = record if loser is current else current
                    continue
            kept.append(current)
            current = record
        kept.append(current)
    return kept, merged_away


def _same_marks(a: Evidence, b: Evidence) -> bool:
    """Near copies fold only when no number, symbol, modal or negation differs: a
    sign or a "not" changes the fact however similar the rest."""
    return meaning_marks(a.canonical.split()) == meaning_marks(b.canonical.split())


def fold_near_duplicates(
    records: list[Evidence], config: DedupConfig, memos: Memos
) -> tuple[list[Evidence], list[Evidence]]:
    """Fold near-duplicates within each document revision into the best-ranked copy.

    Candidates are found with MinHash LSH per revision (never pairwise across the
    request), then confirmed by the estimated Jaccard similarity and the same
    meaning marks (`records.meaning_marks`). The index's bands and the
    sketches' permutations come from the worker's memos (`packer.sketch`):
    they depend on the config alone.
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
            similar = [
                k
                for k in lsh.query(mh)
                if hashes[k][0].jaccard(mh) >= threshold and _same_marks(hashes[k][1], record)
            ]
            if similar:
                fold_copy(hashes[min(similar)][1], record)
                folded.append(record)
                continue
            lsh.insert(record.evidence_id, mh)
            hashes[record.evidence_id] = (mh, record)
            kept.append(record)
    return kept, folded


Value = Quantity | Date


def _same_value(a: Value, b: Value) -> bool:
    """Dates: compatible to their precision; numbers: the same unit and within 1%
    ("3.5 million" is "3,512,000" rounded)."""
    if isinstance(a, Date) or isinstance(b, Date):
        return isinstance(a, Date) and isinstance(b, Date) and a.compatible(b)
    return a.unit == b.unit and abs(a.value - b.value) <= 0.01 * max(abs(a.value), abs(b.value))


def _values(claims: SentenceClaims, slot: SlotKind) -> tuple[Value, ...]:
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
    "800 males" where the population was asked).
    """
    if not entities or not entities.issubset(record.canonical.split()):
        return None
    claims = memos.typed_claims(record.text)
    shared = [
        (sum(w in cues for w in c.words), c) for c in claims if c.complete and _values(c, slot)
    ]
    most, best = max(shared, key=lambda s: s[0], default=(0, None))
    if best is None or most < min(2, len(cues)):
        return None
    where = [i for i, w in enumerate(best.words) if w in cues]
    value = min(_values(best, slot), key=lambda v: min(abs(v.at - i) for i in where))
    return _Answer(index, value, tuple(v for c in claims for v in _values(c, slot)))


def _bucket(value: Value) -> str:
    return "date" if isinstance(value, Date) else f"number:{value.unit}"


def slot_conflicts(
    records: list[Evidence], question: str, memos: Memos
) -> list[tuple[int, int, SlotKind]]:
    """Pairs of passages of different documents that answer the question's slot with
    different values, neither stated by the other (`packer.typed_claims`).

    Pair search: each passage gives at most one answer; answers are bucketed by
    slot kind and unit, and inside a bucket grouped by value, so passages that
    agree are never compared. Cost: O(n) claim look-ups (memoized per text)
    plus O(n·k) comparisons for k distinct answer values in a bucket, linear
    in candidates for the few values a question's passages give. Rejected:
    every pair (quadratic), and comparing every number of two passages
    (flags the other numbers passages state beside the answer).
    """
    slot = question_slot(question)
    if slot is None:
        return []
    cues = question_terms(question)
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
                        and not (a.facets and b.facets and set(a.facets).isdisjoint(b.facets))
                        and not any(_same_value(p.value, v) for v in q.stated)
                        and not any(_same_value(q.value, v) for v in p.stated)
                    ):
                        pairs.append((min(p.index, q.index), max(p.index, q.index), slot))
    return pairs


def conflict_groups(
    pairs: dict[tuple[str, str], set[str]],
) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """Connected components of the disagreeing pairs (each group sorted, the list
    sorted) and, for each, the rules that linked its members, sorted."""
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
    kinds: dict[str, set[str]] = defaultdict(set)
    for pair, rules in pairs.items():
        members[root(pair[0])].update(pair)
        kinds[root(pair[0])].update(rules)
    groups = sorted((tuple(sorted(g)), tuple(sorted(kinds[r]))) for r, g in members.items())
    return [g for g, _ in groups], [k for _, k in groups]


def deduplicate(
    records: list[Evidence],
    config: DedupConfig,
    memos: Memos,
    enabled: bool = True,
    question: str = "",
) -> Deduplicated:
    """Every dedup level the config switches on, in order, then conflict detection
    by the configured rules (which runs with dedup switched off too). Records in
    any order.
    """
    levels = set(config.levels) if enabled else set()
    kept = sorted(records, key=Evidence.rank_key)
    out = Deduplicated(kept=kept)
    if "exact" in levels:
        kept, folded = dedup_exact(kept)
        out.folded_reason.update({r.evidence_id: R.DUPLICATE_EXACT for r in folded})
    if len({r.document_id for r in kept}) < len(kept):  # both need two of one document
        if "overlap" in levels or "adjacent" in levels:
            kept, merged = merge_spans(kept, memos, "overlap" in levels, "adjacent" in levels)
            out.folded_reason.update(merged)
        if "near" in levels:
            kept, near = fold_near_duplicates(kept, config, memos)
            out.folded_reason.update({r.evidence_id: R.DUPLICATE_NEAR for r in near})
        kept.sort(key=Evidence.rank_key)
    kept, reprints, copies = fold_reprints(kept, config, fold="reprint" in levels)
    out.folded_reason.update({r.evidence_id: R.DUPLICATE_NEAR for r in reprints})
    pairs: dict[tuple[str, str], set[str]] = defaultdict(set)
    if "copy" in config.conflict_rules:
        for pair in copies:
            pairs[pair].add("copy")
    if "slot" in config.conflict_rules and question:
        for i, j, kind in slot_conflicts(kept, question, memos):
            pairs[(kept[i].evidence_id, kept[j].evidence_id)].add(kind)
    out.kept = kept
    out.conflicts, out.conflict_kinds = conflict_groups(pairs)
    return out
