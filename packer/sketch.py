"""MinHash sketches for near-duplicate folding, with what depends on the config alone made once.

datasketch derives an LSH index's layout (b bands of r rows) by numerical
integration of its false positive and false negative rates on every
`MinHashLSH()` (about 15 ms), and every `MinHash()` draws its permutations
again from the seeded generator: near-duplicate folding builds one index per
document revision with two chunks or more, and one sketch per chunk. Both
depend only on the config, so a worker's `PackerRuntime` memoizes them
(`Memos.lsh_bands`, `Memos.blank_sketch`); every sketch then shares one
permutation array (`MinHash.copy` shares it) and every index is built with its
known bands. The sketches, the bands and therefore the folds are the ones
datasketch computes itself. Rejected: comparing the chunks of a revision
pairwise by estimated Jaccard without the index, cheaper for a few chunks but a
different set of folds (the index misses some pairs above the threshold, by
design), so prompts would change.

datasketch is imported on first use: it loads scipy for that integration
(about 0.6 s), which a run whose requests never hold two chunks of one
revision should not pay at start.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datasketch import MinHash, MinHashLSH

SEED = 1
"""The permutation seed of every sketch: sketches are only comparable with one seed."""


def lsh_bands(threshold: float, permutations: int) -> tuple[int, int]:
    """The (bands, rows) datasketch chooses for this threshold and sketch size."""
    from datasketch import MinHashLSH

    index = MinHashLSH(threshold=threshold, num_perm=permutations)
    return index.b, index.r


def blank_sketch(permutations: int) -> "MinHash":
    """An empty sketch whose permutations every sketch of this size copies."""
    from datasketch import MinHash

    return MinHash(num_perm=permutations, seed=SEED)


def lsh_index(threshold: float, permutations: int, bands: tuple[int, int]) -> "MinHashLSH":
    """An empty index with its bands known (`lsh_bands`): no integration on construction."""
    from datasketch import MinHashLSH

    return MinHashLSH(threshold=threshold, num_perm=permutations, params=bands)


def sketch(text: str, shingle_words: int, blank: "MinHash") -> "MinHash":
    """The MinHash of the word shingles of `text` (the whole text when it is shorter)."""
    words = text.split()
    n = shingle_words
    shingles = {" ".join(words[i : i + n]) for i in range(max(1, len(words) - n + 1))}
    mh = blank.copy()
    mh.update_batch([s.encode("utf-8") for s in sorted(shingles)])
    return mh
