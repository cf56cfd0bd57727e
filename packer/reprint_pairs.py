"""Which passages of a request are compared whole as possible copies (`packer.reprints`).

Two passages of different documents are compared word by word only when their openings
share enough content words (`_needed`): the comparison costs far more than this search,
and copies of one report open alike. The search is exact: it finds every pair sharing
enough, whichever way it runs (C when built, `shared_openings` otherwise).
"""

import math
from collections import Counter, defaultdict
from itertools import chain

import numpy as np

from packer.native import kernels
from packer.records import Evidence


def candidate_pairs(records: list[Evidence]) -> list[tuple[int, int]]:
    """Pairs (i < j, ascending) of different documents that share enough opening
    content words (`_needed`) to be compared whole.

    Up to `PAIRWISE` records every shared word counts. Beyond, a word most records
    open with says nothing about a pair: a word in more than a quarter of them (and
    16) is not counted. In C when built (`sharing_pairs`: a record counts its shared
    words with the later records on its words' lists, so only pairs sharing a word
    are read), else `shared_openings`.
    """
    contents = [r.facts.content for r in records]  # each word once (`TextFacts.content`)
    needed = [_needed(len(c)) for c in contents]
    widest = len(records) if len(records) <= PAIRWISE else max(16, len(records) // 4)
    return _sharing(contents, needed, [r.document_id for r in records], widest)


def shared_openings(
    words: list[tuple[str, ...]], needed: list[float], documents: list[str], widest: int
) -> list[tuple[int, int]]:
    """The twin of `sharing_pairs`: every pair (i < j, ascending) of different
    `documents` sharing at least one of their `words` held by at most `widest` records
    and at least the smaller of their two `needed` counts (each at least 2). Every pair
    up to `PAIRWISE` records (`pairwise`), a prefix filter beyond (`_prefix_pairs`)."""
    if len(words) <= PAIRWISE:
        return pairwise(words, needed, documents, widest)
    return _prefix_pairs([set(w) for w in words], needed, documents, widest)


def _prefix_pairs(
    words: list[set[str]], needed: list[float], documents: list[str], widest: int
) -> list[tuple[int, int]]:
    """`shared_openings` for many records: a word held by a single record is not
    counted either (it cannot be shared). A pair needs the smaller of its two sides'
    needs, `t`, and is found from that side: a record of `L` counted words sharing `t`
    of them with another shares two of any `L - t + 2` of them, so each record reads
    the postings of its `L - t + 2` rarest words only (those of records needing at
    least as many), and a record met twice there is a candidate, its shared words then
    counted exactly. At 3,000 candidates ~440,000 postings read against ~1,200,000
    word-sharing pairs a request, ~20,000 candidates, ~1,300 that pass. Rejected:
    every word-sharing pair as a numpy code, counted by one sort (n² codes); a prefix
    filter meeting each record's rarest words from both sides and counting every pair
    met once (~100,000 candidates counted in Python: slower than the codes); counting
    the pairs in a Python `Counter` (85% of the packing time at 1,000 candidates); a
    scipy sparse product (~1 ms of fixed cost a request); MinHash-banding the openings
    (it misses some pairs that share enough, so prompts would change).
    """
    postings: dict[str, list[int]] = defaultdict(list)
    for i, opening in enumerate(words):
        for word in opening:
            postings[word].append(i)
    shared = {w: len(p) for w, p in postings.items() if 2 <= len(p) <= widest}
    least = [math.ceil(x) for x in needed]
    counted, read, sizes = [], [], []
    for i, opening in enumerate(words):
        rarest = sorted(shared.keys() & opening, key=shared.__getitem__)
        counted.append(frozenset(rarest))
        reach = len(rarest) >= least[i]  # else it shares too few to be the side needing less
        lists = [postings[w] for w in rarest[: len(rarest) - least[i] + 2]] if reach else []
        read += lists
        sizes.append(sum(map(len, lists)))
    if not read:
        return []
    return [
        (i, j)
        for i, j in _met_twice(read, sizes, least, documents)
        if len(counted[i] & counted[j]) >= min(needed[i], needed[j])
    ]


def _met_twice(
    read: list[list[int]], sizes: list[int], least: list[int], documents: list[str]
) -> list[tuple[int, int]]:
    """Pairs (i < j, ascending) of different documents where one record met the other
    twice in the postings it `read` (`sizes` of them a record, in order), the reader
    needing at most what the other needs (`least`): in numpy, one sort."""
    n = len(sizes)
    partner = np.fromiter(chain.from_iterable(read), dtype=np.int64, count=sum(sizes))
    reader = np.repeat(np.arange(n), sizes)
    need = np.array(least)
    document = np.unique(documents, return_inverse=True)[1]
    keep = (need[partner] >= need[reader]) & (document[partner] != document[reader])
    met, hits = np.unique(reader[keep] * n + partner[keep], return_counts=True)
    first, second = np.divmod(met[hits >= 2], n)
    first, second = np.divmod(
        np.unique(np.minimum(first, second) * n + np.maximum(first, second)), n
    )
    return list(zip(first.tolist(), second.tolist(), strict=True))


PAIRWISE = 24
"""Up to this many records, every pair's opening words are intersected directly."""


def pairwise(
    words: list[tuple[str, ...]], needed: list[float], docs: list[str], widest: int
) -> list[tuple[int, int]]:
    """Every pair (i < j) of different documents sharing at least one of their `words`
    (as sets) held by at most `widest` records and at least the smaller of their two
    `needed` counts, in order. The first record's set is held while its partners are
    scanned (a third less time than indexing both per pair)."""
    sets = [set(w) for w in words]
    held = Counter(chain.from_iterable(sets))
    if max(held.values(), default=0) > widest:
        sets = [{w for w in s if held[w] <= widest} for s in sets]
    pairs = []
    for i, (mine, least, doc) in enumerate(zip(sets, needed, docs, strict=True)):
        for j in range(i + 1, len(sets)):
            common = len(mine & sets[j])
            if docs[j] != doc and common and common >= min(least, needed[j]):
                pairs.append((i, j))
    return pairs


_sharing = kernels.sharing_pairs if kernels else shared_openings


def _needed(size: int) -> float:
    """The opening content words a record of `size` of them must share with another
    for the two to be compared whole; a pair needs the smaller of its two sides'
    (`max(2, 0.4 * the smaller size)`). Stopwords are left out of both the sizes and
    the shared words. Rejected: counting stopwords in the sizes only, which kept a
    short passage with a two-word edit ("4,000²" for "4,0002") from ever being
    compared with its original."""
    return max(2, 0.4 * size)
