"""MinHash sketches and LSH bands made once per runtime give what datasketch gives anew."""

from datasketch import MinHash, MinHashLSH
from hypothesis import given, settings
from hypothesis import strategies as st

from packer import Catalog, PackerRuntime, pack_request
from packer.sketch import SEED, blank_sketch, lsh_bands, lsh_index, sketch
from schemas import PackingConfig
from tests.factories import candidate, document, request
from tests.strategies import examples

WORDS = st.lists(
    st.sampled_from(["the", "cat", "sat", "on", "a", "mat", "while", "dogs", "ran", "far", "away"]),
    max_size=40,
)


def _fresh(text: str, n: int, permutations: int) -> MinHash:
    """A sketch the way datasketch is used without memos: new permutations every time."""
    words = text.split()
    shingles = {" ".join(words[i : i + n]) for i in range(max(1, len(words) - n + 1))}
    mh = MinHash(num_perm=permutations, seed=SEED)
    mh.update_batch([s.encode("utf-8") for s in sorted(shingles)])
    return mh


@settings(max_examples=examples(100))  # each example derives a fresh index's bands: ~20 ms
@given(
    st.lists(WORDS.map(" ".join), min_size=1, max_size=6),
    st.integers(1, 4),
    st.sampled_from([64, 128]),
    st.floats(0.3, 0.9),
)
def test_shared_permutations_and_known_bands_find_what_fresh_ones_find(
    texts: list[str], n: int, permutations: int, threshold: float
) -> None:
    blank = blank_sketch(permutations)
    ours = [sketch(t, n, blank) for t in texts]
    fresh = [_fresh(t, n, permutations) for t in texts]
    assert [list(m.hashvalues) for m in ours] == [list(m.hashvalues) for m in fresh]
    assert blank.is_empty()  # copying never fills the shared blank
    memo_index = lsh_index(threshold, permutations, lsh_bands(threshold, permutations))
    fresh_index = MinHashLSH(threshold=threshold, num_perm=permutations)
    for i, (a, b) in enumerate(zip(ours, fresh, strict=True)):
        memo_index.insert(str(i), a)
        fresh_index.insert(str(i), b)
    for a, b in zip(ours, fresh, strict=True):
        assert sorted(memo_index.query(a)) == sorted(fresh_index.query(b))


def test_a_runtime_derives_bands_and_permutations_once() -> None:
    """Every revision with two chunks builds an index: the config-only parts are memoized."""
    runtime = PackerRuntime.load()
    config = PackingConfig()
    catalog = Catalog([document("d1"), document("d2")])
    for r in range(3):
        req = request(
            candidate(f"a{r}", "d1", f"Refunds take a week in case {r}. Returns are free."),
            candidate(f"b{r}", "d1", f"Stores open at nine in case {r}. Parking is free."),
            candidate(f"c{r}", "d2", f"Shipping takes two days in case {r}. Tracking is online."),
            candidate(f"e{r}", "d2", f"Gift cards never expire in case {r}. Balances are online."),
        )
        pack_request(req, catalog, config, runtime)
    bands = runtime.memos.lsh_bands.cache_info()  # type: ignore[attr-defined]
    blanks = runtime.memos.blank_sketch.cache_info()  # type: ignore[attr-defined]
    assert (bands.misses, blanks.misses) == (1, 1)
    assert bands.hits == blanks.hits == 5  # six revision groups, one derivation
