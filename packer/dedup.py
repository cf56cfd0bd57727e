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
- reprint and conflict, across documents: two passages whose canonical words
  mostly agree, in order (`reprint_similarity`), and whose differences are
  only function words ("has", "the": wording, not content; never a modal or a
  negation) are copies of one report: the lower-ranked one folds into the
  other's `derived_from`.
  When a fact on one side was replaced by a different fact on the other, and
  they share at least `conflict_similarity` of their words, or their stance
  changed ("must" for "may", "not" added, "$" for "€"), or a near copy swaps a
  few content words ("a forward" for "a defender"), they disagree: both
  stay and are flagged as a conflict (rule `copy`). The opt-in `slot` rule
  (`slot_conflicts`) compares typed answers to the question across documents.
  Passages tagged with disjoint facets are about different things and never
  conflict. Rejected: comparing lowercase word skeletons only, which missed
  every conflict whose sentences hold names, and flagged formatting variants
  ("4,000" / "4000") as disagreements.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from itertools import combinations
from typing import Literal

import numpy as np
from datasketch import MinHash

from packer.records import (
    MEANING_WORDS,
    MONTHS,
    STOPWORDS,
    SYMBOLS,
    Evidence,
    canonical_words,
    fact_words,
    meaning_marks,
    question_terms,
)
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
    for left, right in diffs:
        if len(left) == 1 and len(right) > 1 and left[0] == _initials(right):
            continue  # "us" for "united states": one name spelled two ways
        if len(right) == 1 and len(left) > 1 and right[0] == _initials(left):
            continue
        fact_left = any(w in facts_a for w in left)
        fact_right = any(w in facts_b for w in right)
        if fact_left and fact_right and _names_subject(a, left) and _names_subject(b, right):
            return None  # "2012–13 ... team" beside "2013–14 ... team": two subjects
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
    words = [set(r.facts.opening).difference(STOPWORDS) for r in records]
    needed = [_needed(len(w)) for w in words]
    if len(records) <= PAIRWISE:
        return [
            (i, j)
            for i, j in combinations(range(len(records)), 2)
            if records[i].document_id != records[j].document_id
            and len(words[i] & words[j]) >= min(needed[i], needed[j])
        ]
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
            _fold(records[keeper], record)
            folded.append(record)
    pairs = [
        (records[folded_into.get(i, i)].evidence_id, records[folded_into.get(j, j)].evidence_id)
        for i, j in conflict_pairs
    ]
    return kept, folded, [(a, b) for a, b in pairs if a != b]


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
