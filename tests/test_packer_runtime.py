"""One `PackerRuntime` per worker: the only place packing keeps state between requests."""

import importlib
import pickle
import pkgutil
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from apache_beam.utils.shared import Shared

import packer
from packer import Catalog, PackerRuntime, TokenCounter, pack_request
from schemas import PackingConfig
from tests.factories import candidate, document, request
from transforms.catalog.side_input import SnapshotReader
from transforms.pack import PackDoFn

CONFIG = PackingConfig()


def _packer_modules() -> list:
    return [
        importlib.import_module(f"packer.{m.name}") for m in pkgutil.iter_modules(packer.__path__)
    ]


def test_no_packer_module_holds_a_memo() -> None:
    """A module-level cache would outlive a "fresh" runtime: none of ours may exist.

    A cached function imported from the standard library (`urllib.parse.urlsplit`
    keeps one) is a pure function of its argument, not a memo of the packer's."""
    memos = [
        f"{module.__name__}.{name}"
        for module in _packer_modules()
        for name, value in vars(module).items()
        if (hasattr(value, "cache_clear") or hasattr(value, "cache_info"))
        and getattr(value, "__module__", "").partition(".")[0] == "packer"
    ]
    assert memos == []


def _pack(runtime: PackerRuntime) -> str:
    req = request(
        candidate("e1", "d1", "Items may be returned within 30 days. Refunds take a week."),
        candidate("e2", "d1", "Items may be returned within 30 days. Refunds take a week."),
    )
    return pack_request(req, Catalog([document("d1")]), CONFIG, runtime).prompt.model_dump_json()


def test_runtimes_share_nothing_and_give_the_same_packets() -> None:
    warm = PackerRuntime.load()
    first = _pack(warm)
    assert warm.memos.text_facts.cache_info().currsize > 0  # type: ignore[attr-defined]
    cold = PackerRuntime.load()
    assert cold.memos.text_facts.cache_info().currsize == 0  # type: ignore[attr-defined]
    assert cold.tokens.hits == cold.tokens.misses == 0
    assert _pack(cold) == first == _pack(warm)


def test_a_token_counter_shared_by_threads_stays_exact() -> None:
    """Eviction under contention: a tiny LRU hammered by four threads."""
    loaded = TokenCounter.load()
    counter = TokenCounter(loaded.encoding, loaded.name, cache_size=8)
    texts = [
        f"Passage number {i} says the refund window is {i % 97} days long, not more."
        for i in range(400)
    ]
    expected = [len(counter.encoding.encode_ordinary(t)) for t in texts]

    def count_all(offset: int) -> list[int]:
        rotated = texts[offset:] + texts[:offset]
        return [counter.count(t) for t in rotated]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(count_all, (0, 100, 200, 300)))
    for offset, got in zip((0, 100, 200, 300), results, strict=True):
        assert got == expected[offset:] + expected[:offset]
    assert len(counter._cache) <= 8


def test_a_workers_dofn_threads_share_one_runtime() -> None:
    """Copies of one DoFn (a worker's threads) acquire one runtime; another step its own."""
    fn = PackDoFn(CONFIG, partial(SnapshotReader, Shared()), None)
    thread_copy = pickle.loads(pickle.dumps(fn))
    fn.setup()
    thread_copy.setup()
    assert fn._runtime is thread_copy._runtime
    other_step = PackDoFn(CONFIG, partial(SnapshotReader, Shared()), None)
    other_step.setup()
    assert other_step._runtime is not fn._runtime
