"""Deduplication inside safe identity boundaries, reprints, and conflict detection.

- exact: the same canonical text (`records.canonical_words`: case, punctuation,
  number formats, wire datelines and bylines ignored; signs, currencies, %,
  operators, superscripts, modal and negation words kept) anywhere in the
  tenant's request; the best-ranked record stays and folds the others into
  `derived_from` (distinct publications stay citable).
- overlap and adjacent: overlapping (or, level `adjacent`, contiguous) spans of
  the same document revision, section and effective date merge into one record
  over the union span.
- near: MinHash similarity (`packer.sketch`), only inside one document revision and
  between records with the same meaning marks: the lower-ranked chunk folds into
  the better one's `derived_from`.
- reprint and conflict, across documents (`packer.reprints`): copies of one
  report fold into the best-ranked; copies with a fact or stance changed
  stay and are flagged as a conflict (rule `copy`). The opt-in `slot` and
  `name` rules (`packer.slot_conflicts`) compare typed answers to the
  question across documents.
"""

from collections import defaultdict
from dataclasses import dataclass, field

from packer.amounts import amount_conflicts
from packer.polarity import polarity_conflicts
from packer.question import Question
from packer.records import Evidence, fold_copy, meaning_marks
from packer.reprints import fold_reprints
from packer.runtime import Memos
from packer.sketch import shares_band, similarity, sketch
from packer.slot_conflicts import conflict_groups, slot_conflicts
from schemas import DedupConfig, ExclusionReason


@dataclass(slots=True)
class Deduplicated:
    """What dedup kept, what it folded (by id, with the reason its fate carries), and the
    conflict groups among the kept. Nothing is dropped: every copy folds into a keeper
    and shares its fate."""

    kept: list[Evidence]
    folded_reason: dict[str, ExclusionReason] = field(default_factory=dict)
    conflicts: list[tuple[str, ...]] = field(default_factory=list)
    conflict_kinds: list[tuple[str, ...]] = field(default_factory=list)
    """Per conflict group, the rules that found it: `copy`, `polarity`, `amount`, `number`,
    `date`, `name`."""


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
                        ExclusionReason.MERGED_ADJACENT
                        if touching
                        else ExclusionReason.DUPLICATE_OVERLAP
                    )
                    current = record if loser is current else current
                    continue
            kept.append(current)
            current = record
        kept.append(current)
    return kept, merged_away


DIGITS = "0123456789"


def _marks_classes(group: list[Evidence]) -> dict[str, tuple[str, ...]]:
    """The meaning marks of each record of `group` that shares them with another.

    Near copies fold only when no number, symbol, modal or negation differs (a
    sign or a "not" changes the fact however similar the rest), so a record
    whose marks no other record of its revision has can neither fold nor be
    folded into: it needs no sketch. The marks are compared only among records
    with the same count of each ASCII digit, a necessary condition (every digit
    of a canonical text is in a mark) that costs ten `str.count`s; paragraphs of
    one document seldom pass it, chunks without numbers do.
    """
    by_digits: dict[tuple[int, ...], list[Evidence]] = defaultdict(list)
    for record in group:
        by_digits[tuple(map(record.canonical.count, DIGITS))].append(record)
    by_marks: dict[tuple[str, ...], list[Evidence]] = defaultdict(list)
    for records in by_digits.values():
        if len(records) > 1:
            for record in records:
                by_marks[tuple(meaning_marks(record.facts.canonical_words))].append(record)
    return {r.evidence_id: marks for marks, rs in by_marks.items() if len(rs) > 1 for r in rs}


def fold_near_duplicates(
    records: list[Evidence], config: DedupConfig, memos: Memos
) -> tuple[list[Evidence], list[Evidence]]:
    """Fold near-duplicates within each document revision into the best-ranked copy.

    Best first, each record is compared with the kept records of its revision
    and meaning marks (`_marks_classes`): those an LSH index of the config's
    bands would propose (`sketch.shares_band`) and whose estimated Jaccard
    similarity reaches the threshold are its near copies, and it folds into the
    one of least id. The bands and permutations come from the worker's memos
    (`packer.sketch`): they depend on the config alone. Rejected: comparing
    every pair of a revision's chunks by estimated Jaccard without the bands,
    cheaper for a few chunks but a different set of folds (the index misses
    some pairs above the threshold, by design), so prompts would change.
    """
    groups: dict[tuple[str, str], list[Evidence]] = defaultdict(list)
    for record in records:
        groups[(record.document_id, record.revision_id)].append(record)
    kept: list[Evidence] = []
    folded: list[Evidence] = []
    threshold, size = config.near_duplicate_threshold, config.minhash_permutations
    for group in groups.values():
        if len(group) == 1:
            kept.extend(group)
            continue
        classes = _marks_classes(group)
        if not classes:
            kept.extend(_best_first(group))
            continue
        bands = memos.lsh_bands(threshold, size)
        perms = memos.permutations(size)
        sketched: dict[tuple[str, ...], list[tuple[tuple[int, ...], Evidence]]] = defaultdict(list)
        for record in _best_first(group):
            marks = classes.get(record.evidence_id)
            if marks is None:
                kept.append(record)
                continue
            mh = sketch(record.canonical, config.shingle_words, perms)
            similar = [
                other
                for other_mh, other in sketched[marks]
                if shares_band(other_mh, mh, bands) and similarity(other_mh, mh) >= threshold
            ]
            if similar:
                fold_copy(min(similar, key=lambda r: r.evidence_id), record)
                folded.append(record)
                continue
            sketched[marks].append((mh, record))
            kept.append(record)
    return kept, folded


def deduplicate(
    records: list[Evidence],
    config: DedupConfig,
    memos: Memos,
    enabled: bool = True,
    question: Question | None = None,
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
        out.folded_reason.update({r.evidence_id: ExclusionReason.DUPLICATE_EXACT for r in folded})
    if len({r.document_id for r in kept}) < len(kept):  # both need two of one document
        if "overlap" in levels or "adjacent" in levels:
            kept, merged = merge_spans(kept, memos, "overlap" in levels, "adjacent" in levels)
            out.folded_reason.update(merged)
        if "near" in levels:
            kept, near = fold_near_duplicates(kept, config, memos)
            out.folded_reason.update({r.evidence_id: ExclusionReason.DUPLICATE_NEAR for r in near})
        kept.sort(key=Evidence.rank_key)
    slot = question.slot if question is not None else None
    kept, reprints, copies = fold_reprints(kept, config, "reprint" in levels, slot)
    out.folded_reason.update({r.evidence_id: ExclusionReason.DUPLICATE_NEAR for r in reprints})
    pairs: dict[tuple[str, str], set[str]] = defaultdict(set)
    if "copy" in config.conflict_rules:
        for pair in copies:
            pairs[pair].add("copy")
    if "polarity" in config.conflict_rules:
        for i, j in polarity_conflicts(kept, memos):
            pairs[(kept[i].evidence_id, kept[j].evidence_id)].add("polarity")
    if question is not None and question.text:
        found: list[tuple[int, int, str]] = [
            *slot_conflicts(kept, question, memos, config.conflict_rules)
        ]
        if "amount" in config.conflict_rules:
            found += amount_conflicts(kept, question, memos)
        for i, j, kind in found:
            pairs[(kept[i].evidence_id, kept[j].evidence_id)].add(kind)
    out.kept = kept
    out.conflicts, out.conflict_kinds = conflict_groups(pairs)
    return out
