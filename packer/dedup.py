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
  stay and are flagged as a conflict (rule `copy`). The opt-in `slot` and
  `name` rules (`packer.slot_conflicts`) compare typed answers to the
  question across documents.
  Passages tagged with disjoint facets are about different things and never
  conflict. Rejected: comparing lowercase word skeletons only, which missed
  every conflict whose sentences hold names, and flagged formatting variants
  ("4,000" / "4000") as disagreements.
"""

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from itertools import combinations
from typing import Literal

from datasketch import MinHash

from packer.merge import fold as _fold
from packer.merge import merge_spans
from packer.records import (
    MEANING_WORDS,
    MONTHS,
    STOPWORDS,
    SYMBOLS,
    Evidence,
    canonical_words,
    fact_words,
    meaning_marks,
)
from packer.runtime import Memos
from packer.sketch import lsh_index, sketch
from packer.slot_conflicts import conflict_groups, slot_conflicts
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
            _fold(keeper, record)
            folded.append(record)
    return kept, folded


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
    """Pairs of different documents that share enough opening words to be compared.

    A few records are compared pairwise; more go through an inverted index over
    their opening words (common words and words most records share left out),
    which keeps this near linear in the records.
    """
    words = [set(r.facts.opening).difference(STOPWORDS) for r in records]
    sizes = [len(w) for w in words]
    if len(records) <= PAIRWISE:
        return [
            (i, j)
            for i, j in combinations(range(len(records)), 2)
            if records[i].document_id != records[j].document_id
            and _shares_enough(len(words[i] & words[j]), sizes[i], sizes[j])
        ]
    postings: dict[str, list[int]] = defaultdict(list)
    for i, opening in enumerate(words):
        for word in opening:
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
        and _shares_enough(n, sizes[i], sizes[j])
    ]


PAIRWISE = 24
"""Up to this many records, every pair's opening words are intersected directly."""


def _shares_enough(shared: int, size_a: int, size_b: int) -> bool:
    """Enough opening content words in common (of each side's, stopwords left out
    of both counts) to compare two passages whole. Rejected: counting stopwords
    in the sizes only, which kept a short passage with a two-word edit ("4,000²"
    for "4,0002") from ever being compared with its original."""
    return shared >= max(2, 0.4 * min(size_a, size_b))


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
    if question:
        for i, j, kind in slot_conflicts(kept, question, memos, config.conflict_rules):
            pairs[(kept[i].evidence_id, kept[j].evidence_id)].add(kind)
    out.kept = kept
    out.conflicts, out.conflict_kinds = conflict_groups(pairs)
    return out
