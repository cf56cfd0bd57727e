"""Deduplication inside safe identity boundaries, and conflict detection.

- exact: same normalized text within the tenant; the best-ranked record stays and
  folds the others into `derived_from` (distinct publications stay citable).
- overlap: overlapping spans of the same document revision and section merge
  into one record over the union span.
- near: MinHash similarity, only inside one document revision (never across
  documents: independent sources that agree are not duplicates).
- conflicts: passages from different documents whose lowercase words are the
  same, in the same order, but whose values (numbers, dates, names) differ.
"""

from collections import defaultdict

from datasketch import MinHash, MinHashLSH

from packer.gates import Exclusion
from packer.records import Evidence, lowercase_words, text_facts
from schemas import DedupConfig, ExclusionReason

R = ExclusionReason


def _best_first(records: list[Evidence]) -> list[Evidence]:
    return sorted(records, key=Evidence.rank_key)


def _fold(keeper: Evidence, other: Evidence) -> None:
    keeper.derived_from.append(other.evidence_id)
    keeper.derived_from.extend(other.derived_from)
    keeper.facets = tuple(sorted(set(keeper.facets) | set(other.facets)))


def dedup_exact(records: list[Evidence]) -> tuple[list[Evidence], list[Evidence]]:
    """Fold exact duplicates (normalized text) into the best-ranked copy.

    Returns (kept, folded); folded records reach the prompt only through their keeper.
    """
    keepers: dict[str, Evidence] = {}
    kept: list[Evidence] = []
    folded: list[Evidence] = []
    for record in _best_first(records):
        keeper = keepers.get(record.normalized)
        if keeper is None:
            keepers[record.normalized] = record
            kept.append(record)
        else:
            _fold(keeper, record)
            folded.append(record)
    return kept, folded


def _mergeable(record: Evidence) -> bool:
    span = record.span
    return span is not None and span[1] - span[0] == len(record.text)


def _merge_pair(left: Evidence, right: Evidence) -> Evidence | None:
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
    keeper.facts = text_facts(text)
    keeper.span = (l_start, max(l_end, r_end))
    keeper.score = max(left.score, right.score)
    _fold(keeper, other)
    return other


def merge_overlaps(records: list[Evidence]) -> tuple[list[Evidence], list[Evidence]]:
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
                loser = _merge_pair(current, record)
                if loser is not None:
                    merged_away.append(loser)
                    current = record if loser is current else current
                    continue
            kept.append(current)
            current = record
        kept.append(current)
    return kept, merged_away


def _minhash(text: str, config: DedupConfig) -> MinHash:
    words = text.split()
    n = config.shingle_words
    shingles = {" ".join(words[i : i + n]) for i in range(max(1, len(words) - n + 1))}
    mh = MinHash(num_perm=config.minhash_permutations, seed=1)
    mh.update_batch([s.encode("utf-8") for s in sorted(shingles)])
    return mh


def drop_near_duplicates(
    records: list[Evidence], config: DedupConfig
) -> tuple[list[Evidence], list[Exclusion]]:
    """Drop near-duplicates within each document revision, keeping the best-ranked.

    Candidates are found with MinHash LSH per revision (never pairwise across the
    request), then confirmed by the estimated Jaccard similarity.
    """
    groups: dict[tuple[str, str], list[Evidence]] = defaultdict(list)
    for record in records:
        groups[(record.document_id, record.revision_id)].append(record)
    kept: list[Evidence] = []
    dropped: list[Exclusion] = []
    threshold = config.near_duplicate_threshold
    for group in groups.values():
        if len(group) == 1:
            kept.extend(group)
            continue
        lsh = MinHashLSH(threshold=threshold, num_perm=config.minhash_permutations)
        hashes: dict[str, MinHash] = {}
        for record in _best_first(group):
            mh = _minhash(record.normalized, config)
            similar = [k for k in lsh.query(mh) if hashes[k].jaccard(mh) >= threshold]
            if similar:
                dropped.append(
                    Exclusion(
                        record.candidate, R.DUPLICATE_NEAR, f"near-duplicate of {min(similar)}"
                    )
                )
                continue
            lsh.insert(record.evidence_id, mh)
            hashes[record.evidence_id] = mh
            kept.append(record)
    return kept, dropped


def find_conflicts(records: list[Evidence]) -> list[tuple[str, ...]]:
    """Groups of evidence ids from different documents that differ only in values.

    A passage's skeleton is its sequence of lowercase words. Exact duplicates
    are folded before this runs, so equal skeletons with different documents
    and different texts mean the passages disagree on a number, date or name.
    Only passages whose skeleton keeps at least half of their words (and four)
    count: otherwise little but the values is shared. Records are bucketed by
    a cheap key first, and only buckets spanning documents are compared, so
    this stays linear.
    """
    buckets: dict[tuple[str, ...], list[Evidence]] = defaultdict(list)
    for record in records:
        buckets[record.facts.skeleton_key].append(record)
    conflicts = []
    for bucket in buckets.values():
        if len({r.document_id for r in bucket}) < 2:
            continue
        by_skeleton: dict[str, list[Evidence]] = defaultdict(list)
        for record in bucket:
            skeleton = lowercase_words(record.text)
            # Mostly shared wording: values are a minority of the passage.
            if len(skeleton) >= max(4, record.facts.words // 2):
                by_skeleton[" ".join(skeleton)].append(record)
        for group in by_skeleton.values():
            if len({r.document_id for r in group}) > 1 and len({r.normalized for r in group}) > 1:
                conflicts.append(tuple(sorted(r.evidence_id for r in group)))
    return sorted(conflicts)
