"""How one record absorbs another: a fold (the keeper lists the other, and what the
other derived from, in `derived_from`, and takes its facets) and the span merges
of one document revision (seed 002's conditions).
"""

from collections import defaultdict

from packer.records import Evidence
from packer.runtime import Memos
from schemas import ExclusionReason

R = ExclusionReason


def fold(keeper: Evidence, other: Evidence) -> None:
    keeper.derived_from.append(other.evidence_id)
    keeper.derived_from.extend(other.derived_from)
    keeper.facets = tuple(sorted(set(keeper.facets) | set(other.facets)))


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
    fold(keeper, other)
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
