"""Near-duplicate sketches, bands and folds computed without datasketch are datasketch's.

datasketch 2.0 (scheme `affine32`, seed 1) is the reference the near-duplicate
folds were defined with: each piece of `packer.sketch` is compared with it, and
`fold_near_duplicates` with the rule as it was written over datasketch's
`MinHash` and `MinHashLSH` (`_folds_by_datasketch`), on texts that hold any
Unicode.
"""

import copy
from collections import defaultdict

import pytest
from datasketch import MinHash, MinHashLSH
from datasketch.lsh import _optimal_param
from hypothesis import example, given, settings
from hypothesis import strategies as st

from packer import Catalog, PackerRuntime, pack_request
from packer.dedup import fold_near_duplicates
from packer.records import Evidence, meaning_marks, text_facts
from packer.runtime import Memos
from packer.sketch import SEED, lsh_bands, minhash, permutations, shares_band, similarity
from schemas import DedupConfig, PackingConfig
from tests.factories import candidate, document, request
from tests.strategies import examples

WORDS = ["the", "cat", "sat", "on", "a", "mat", "while", "dogs", "ran", "far", "away", "not"]
HOSTILE_WORDS = st.one_of(
    st.sampled_from([*WORDS, "1,000", "-5", "$5", "5%", "km²", "é", "ﬁ", "\u2028", "𝟎", "一"]),
    st.text(max_size=12),
)
TEXTS = st.lists(HOSTILE_WORDS, max_size=40).map(" ".join)


def _datasketch(text: str, n: int, size: int) -> MinHash:
    """The sketch as near-duplicate folding made it with datasketch."""
    words = text.split()
    shingles = {" ".join(words[i : i + n]) for i in range(max(1, len(words) - n + 1))}
    mh = MinHash(num_perm=size, seed=SEED)
    mh.update_batch([s.encode("utf-8") for s in sorted(shingles)])
    return mh


@settings(max_examples=examples(300))
@given(TEXTS, st.integers(1, 10), st.sampled_from([16, 64, 128]))
def test_a_sketch_is_datasketchs(text: str, n: int, size: int) -> None:
    theirs = _datasketch(text, n, size)
    assert minhash(text, n, permutations(size)) == tuple(map(int, theirs.hashvalues))


@pytest.mark.parametrize("size", [16, 17, 64, 100, 512])
def test_permutations_are_datasketchs(size: int) -> None:
    a, b = MinHash(num_perm=size, seed=SEED).permutations
    perms = permutations(size)
    assert (perms.a, perms.b) == (tuple(map(int, a)), tuple(map(int, b)))


@settings(max_examples=examples(60), deadline=None)  # datasketch's own choice: up to 0.1 s
@given(st.floats(0.0, 1.0, exclude_min=True), st.integers(16, 512))
@example(0.8, 64)
@example(1.0, 16)
@example(0.99, 16)
@example(0.5, 512)
@example(1e-9, 16)
def test_bands_are_the_choice_datasketch_makes(threshold: float, size: int) -> None:
    assert lsh_bands(threshold, size) == _optimal_param(threshold, size, 0.5, 0.5)


def test_the_default_bands_need_no_datasketch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a near tie between two choices defers to datasketch; the default is none."""

    def refuse(*args: object) -> None:
        raise AssertionError("datasketch was asked")

    monkeypatch.setattr("datasketch.lsh._optimal_param", refuse)
    config = DedupConfig()
    assert lsh_bands(config.near_duplicate_threshold, config.minhash_permutations) == (5, 11)


@settings(max_examples=examples(200))
@given(st.lists(TEXTS, min_size=2, max_size=6), st.floats(0.3, 0.95), st.sampled_from([16, 64]))
def test_an_index_of_the_bands_proposes_the_pairs_datasketchs_index_proposes(
    texts: list[str], threshold: float, size: int
) -> None:
    bands = lsh_bands(threshold, size)
    if bands[0] < 2:  # an index datasketch refuses to build
        return
    index = MinHashLSH(threshold=threshold, num_perm=size)
    theirs = [_datasketch(t, 3, size) for t in texts]
    ours = [minhash(t, 3, permutations(size)) for t in texts]
    for i, mh in enumerate(theirs):
        index.insert(i, mh)
    for i, mh in enumerate(theirs):
        proposed = {j for j, o in enumerate(ours) if shares_band(o, ours[i], bands)}
        assert set(index.query(mh)) == proposed
        assert [mh.jaccard(o) for o in theirs] == [similarity(ours[i], o) for o in ours]


def _folds_by_datasketch(
    records: list[Evidence], config: DedupConfig
) -> tuple[list[Evidence], list[Evidence]]:
    """Near-duplicate folding as it was written over datasketch: an index per revision,
    every record sketched, the marks compared for each proposed pair."""
    groups: dict[tuple[str, str], list[Evidence]] = defaultdict(list)
    for record in records:
        groups[(record.document_id, record.revision_id)].append(record)
    kept: list[Evidence] = []
    folded: list[Evidence] = []
    threshold = config.near_duplicate_threshold
    for group in groups.values():
        if len(group) == 1:
            kept.extend(group)
            continue
        lsh = MinHashLSH(threshold=threshold, num_perm=config.minhash_permutations)
        hashes: dict[str, tuple[MinHash, Evidence]] = {}
        for record in sorted(group, key=Evidence.rank_key):
            mh = _datasketch(record.canonical, config.shingle_words, config.minhash_permutations)
            marks = meaning_marks(record.canonical.split())
            similar = [
                k
                for k in lsh.query(mh)
                if hashes[k][0].jaccard(mh) >= threshold
                and meaning_marks(hashes[k][1].canonical.split()) == marks
            ]
            if similar:
                keeper = hashes[min(similar)][1]
                keeper.derived_from.append(record.evidence_id)
                keeper.derived_from.extend(record.derived_from)
                keeper.facets = tuple(sorted(set(keeper.facets) | set(record.facets)))
                folded.append(record)
                continue
            lsh.insert(record.evidence_id, mh)
            hashes[record.evidence_id] = (mh, record)
            kept.append(record)
    return kept, folded


@st.composite
def near_copies(draw: st.DrawFn) -> list[Evidence]:
    """Records of two documents: texts and copies of them with a few words changed."""
    bases = draw(st.lists(st.lists(HOSTILE_WORDS, min_size=1, max_size=30), min_size=1, max_size=3))
    records = []
    for i in range(draw(st.integers(2, 8))):
        words = list(draw(st.sampled_from(bases)))
        for _ in range(draw(st.integers(0, 2))):
            at = draw(st.integers(0, len(words)))
            cut = draw(st.integers(0, 1))
            words[at : at + cut] = draw(st.lists(HOSTILE_WORDS, max_size=1))
        text = " ".join(words)
        facets = draw(st.lists(st.sampled_from(["x", "y"]), max_size=1))
        c = candidate(f"e{i}", draw(st.sampled_from(["d1", "d2"])), text, query_facets=facets)
        score = draw(st.sampled_from([0.1, 0.5, 0.9]))
        facts = text_facts(text)
        records.append(
            Evidence(c, c.document_id, "r1", None, text, facts, score, c.query_facets, None)
        )
    return records


@settings(max_examples=examples(300), deadline=None)
@given(near_copies(), st.sampled_from([(0.8, 64, 3), (0.5, 16, 1), (0.9, 128, 2), (0.3, 64, 4)]))
def test_near_duplicate_folds_are_those_of_the_rule_over_datasketch(
    records: list[Evidence], setting: tuple[float, int, int]
) -> None:
    threshold, size, shingles = setting
    config = DedupConfig(
        near_duplicate_threshold=threshold, minhash_permutations=size, shingle_words=shingles
    )
    theirs = copy.deepcopy(records)
    kept, folded = fold_near_duplicates(records, config, Memos())
    their_kept, their_folded = _folds_by_datasketch(theirs, config)

    def fates(rs: list[Evidence]) -> list[tuple[str, list[str], tuple[str, ...]]]:
        return [(r.evidence_id, r.derived_from, r.facets) for r in rs]

    assert fates(kept) == fates(their_kept)
    assert fates(folded) == fates(their_folded)


def test_a_runtime_derives_bands_and_permutations_once() -> None:
    """Every revision whose chunks share their marks sketches: the config-only parts are
    memoized."""
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
    perms = runtime.memos.permutations.cache_info()  # type: ignore[attr-defined]
    assert (bands.misses, perms.misses) == (1, 1)
    assert bands.hits == perms.hits == 2  # d1's three groups (d2's differ: "never")


def test_chunks_that_differ_in_a_number_are_never_sketched() -> None:
    """Their marks differ, so no sketch could fold them: the memos are never asked."""
    runtime = PackerRuntime.load()
    catalog = Catalog([document("d1")])
    req = request(
        candidate("a", "d1", "Refunds take 7 days. Returns are free."),
        candidate("b", "d1", "Refunds take 8 days. Returns are free."),
    )
    result = pack_request(req, catalog, PackingConfig(), runtime)
    assert runtime.memos.permutations.cache_info().misses == 0  # type: ignore[attr-defined]
    assert sorted(b.evidence_id for b in result.manifest.evidence) == ["a", "b"]


def test_a_config_of_one_band_packs_near_copies() -> None:
    """datasketch refuses an index of one band (0.99 with 16 permutations): such a request
    failed; one band proposes chunks equal on its rows (here every shingle is shared)."""
    assert lsh_bands(0.99, 16) == (1, 16)
    runtime = PackerRuntime.load()
    text = "refunds take a week refunds take a week"
    req = request(
        candidate("a", "d1", text, retrieval_score=0.9), candidate("b", "d1", text + " refunds")
    )
    dedup = DedupConfig(near_duplicate_threshold=0.99, minhash_permutations=16)
    result = pack_request(req, Catalog([document("d1")]), PackingConfig(dedup=dedup), runtime)
    [block] = result.manifest.evidence
    assert (block.evidence_id, block.derived_from) == ("a", ["b"])
