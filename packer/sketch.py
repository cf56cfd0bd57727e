"""MinHash sketches and LSH bands of near-duplicate folding, computed here without datasketch.

The rule is datasketch 2.0's, which the folds were defined with: a sketch of
`n` values is, per permutation `k`, the least `a_k * h + b_k` (mod 2^32) over
the word shingles of the text, `h` each shingle's SHA-1 (first four bytes,
little-endian) through MurmurHash3's 32-bit finalizer, with `a_k` and `b_k`
drawn by numpy's `RandomState(1)` (its `affine32` scheme, seed 1); an index of
`b` bands of `r` rows proposes two sketches that agree on every row of some
band; the estimated Jaccard similarity is the share of equal values. Tests
compare each piece with datasketch itself (`tests/test_packer_sketch.py`).

Why not datasketch at run time (measured 2026-12-03, 300 requests of 10
paragraph-sized chunks of 2 documents, CPU time, a fresh runtime): its
`MinHash.update_batch` costs a Python call per shingle (SHA-1, `struct`), about
100 us a 90-word paragraph, three to four times tokenizing it, and 56% of
packing such requests; `MinHashLSH` derives its bands with scipy's numerical
integration, which a fresh process imports (about 0.6 s) on its first request
with two chunks of one revision. Here the sketch is one pass in C
(`packer/_native.c`, `minhash`; `minhash` below is its pure-Python twin) and
the bands are the same optimisation integrated exactly (`lsh_bands`).
"""

import hashlib
from dataclasses import dataclass

import numpy as np

from packer.native import kernels

SEED = 1
"""The permutation seed of every sketch: sketches are only comparable with one seed."""
MASK = 0xFFFFFFFF
TIE_MARGIN = 1e-9
"""How close two band choices' weighted errors may be before the exact integrals
cannot tell which one scipy's adaptive quadrature ranks first (its results agree
with the exact ones to 3e-13 on a sample of choices at 16 to 512 permutations; see
`lsh_bands`)."""


@dataclass(frozen=True, slots=True)
class Permutations:
    """The `a_k`, `b_k` of every sketch of one size, and both packed for the C kernel."""

    a: tuple[int, ...]
    b: tuple[int, ...]
    packed: bytes


def permutations(size: int) -> Permutations:
    """The permutations datasketch draws for `size` values (scheme `affine32`, `SEED`)."""
    generator = np.random.RandomState(SEED)
    a = generator.randint(0, 1 << 31, size, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = generator.randint(0, 1 << 32, size, dtype=np.uint32)
    packed = np.concatenate([a, b]).astype("<u4").tobytes()
    return Permutations(tuple(map(int, a)), tuple(map(int, b)), packed)


def _finalized(digest: bytes) -> int:
    """MurmurHash3's 32-bit finalizer of a SHA-1 digest's first four bytes."""
    h = int.from_bytes(digest[:4], "little")
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & MASK
    return h ^ (h >> 16)


def minhash(text: str, shingle_words: int, perms: Permutations) -> tuple[int, ...]:
    """The sketch of the word shingles of `text` (the whole text when it is shorter).

    The definition; `packer/_native.c` computes the same in one pass (a test
    holds the two equal).
    """
    words = text.split()
    n = shingle_words
    hashes = {
        _finalized(hashlib.sha1(" ".join(words[i : i + n]).encode("utf-8")).digest())
        for i in range(max(1, len(words) - n + 1))
    }
    return tuple(
        min((a * h + b) & MASK for h in hashes) for a, b in zip(perms.a, perms.b, strict=True)
    )


def sketch(text: str, shingle_words: int, perms: Permutations) -> tuple[int, ...]:
    """`minhash`, in C when built."""
    if kernels is not None:
        return kernels.minhash(text, shingle_words, perms.packed)  # type: ignore[no-any-return]
    return minhash(text, shingle_words, perms)


def shares_band(x: tuple[int, ...], y: tuple[int, ...], bands: tuple[int, int]) -> bool:
    """Whether an index of `bands` (bands, rows) proposes the pair: equal on some whole band."""
    b, r = bands
    return any(x[i : i + r] == y[i : i + r] for i in range(0, b * r, r))


def similarity(x: tuple[int, ...], y: tuple[int, ...]) -> float:
    """The estimated Jaccard similarity: the share of equal values."""
    return sum(p == q for p, q in zip(x, y, strict=True)) / len(x)


def lsh_bands(threshold: float, size: int) -> tuple[int, int]:
    """The (bands, rows) that datasketch's `MinHashLSH(threshold, size)` chooses.

    The choice minimizes half the false positive plus half the false negative
    probability, each an integral of a polynomial in the similarity `s` of
    degree `bands * rows <= size`: Gauss-Legendre quadrature with
    `size // 2 + 1` nodes integrates it exactly, all choices in a few
    milliseconds with numpy. The first choice of least error in datasketch's
    order (bands, then rows, ascending) is taken; when another's error is
    within `TIE_MARGIN`, the exact integrals cannot say which of the two
    scipy's quadrature puts first, and datasketch itself decides (then alone
    importing it). Checked against datasketch at thresholds 0.01 to 1 by 0.01
    and 13 sizes from 16 to 512: all 1,300 choices equal, 2 of them deferred
    (0.08 at 400 and 512 permutations). Rejected: a constant table of
    datasketch's choices, since the threshold is any number in (0, 1].

    Unlike `MinHashLSH`, a choice of one band is kept (an index with one
    band proposes pairs that agree on its rows): datasketch refuses it, so a
    request with two chunks of one revision failed to pack at such a config
    (0.99 with 16 permutations).
    """
    x, w = np.polynomial.legendre.leggauss(size // 2 + 1)
    below_s, below_w = threshold * (x + 1) / 2, w * threshold / 2
    above_s, above_w = threshold + (1 - threshold) * (x + 1) / 2, w * (1 - threshold) / 2
    errors: list[float] = []
    choices: list[tuple[int, int]] = []
    for b in range(1, size + 1):
        rows = np.arange(1, size // b + 1, dtype=np.float64)[:, None]
        with np.errstate(divide="ignore"):  # s = 1 at threshold 1, where the weights are 0
            missed_below = b * np.log1p(-(below_s[None, :] ** rows))  # log (1 - s^r)^b
            missed_above = b * np.log1p(-(above_s[None, :] ** rows))
        false_positive = -np.expm1(missed_below) @ below_w
        false_negative = np.exp(missed_above) @ above_w
        errors.extend((0.5 * false_positive + 0.5 * false_negative).tolist())
        choices.extend((b, int(r)) for r in rows[:, 0])
    least = min(errors)
    close = [c for c, e in zip(choices, errors, strict=True) if e - least < TIE_MARGIN]
    if len(close) == 1:
        return close[0]
    from datasketch.lsh import _optimal_param

    return _optimal_param(threshold, size, 0.5, 0.5)  # type: ignore[no-any-return]
