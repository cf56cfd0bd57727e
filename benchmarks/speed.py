"""Speed of every packer on one generated workload, against the tokenizer floor.

    python -m benchmarks.speed [--data-dir ../shared/data] [--requests 2000] [--out FILE]

The floor is raw tiktoken: encoding every candidate text once, nothing else.
Every packer runs over the same pre-built requests (building them is not timed);
each figure is the best of `--repeats` runs in this one process, so all of them
see the same machine load. Sections:
- compare: fresh texts (no repeats); floor, ours with cold caches (empty token
  cache, no memoized text facts) and warm ones (the workload packed once
  before), the naive loop, LlamaIndex truncate/repack, Haystack; and the
  tokens each of ours and the floor encode per request;
- repeats: half of each request's candidates recur across requests;
- sweep: candidates per request 10, 100, 1,000 at a constant candidate total;
- beam: the batch pipeline on the local runner, 1 and 2 workers, vs ours;
- memory: peak RSS of ours over 1k, 10k, 100k streamed requests (subprocesses);
- profiles: cProfile of ours with cold and with warm caches.
"""

import argparse
import cProfile
import io
import json
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import tiktoken

from benchmarks.adapters import DEFAULT_DATA_DIR, DataMissingError
from benchmarks.baselines import (
    EVAL_TIME,
    HaystackLostInTheMiddle,
    LlamaIndexRepack,
    LlamaIndexTruncate,
    NaivePacker,
    OurPacker,
    Packed,
    tiktoken_counter,
)
from benchmarks.offline_tiktoken import offline_cl100k_cache
from benchmarks.quality import token_stats
from benchmarks.stamp import machine
from benchmarks.workload import Pool, candidate_texts, generate
from packer import Catalog, PackerRuntime, TokenCounter, pack_request
from schemas import PackingConfig, Request

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "speed.json"
BUDGET = 1024
SWEEP = (10, 100, 1000)
MEMORY_SIZES = (1_000, 10_000, 100_000)
PACKAGES = (
    "apache-beam",
    "tiktoken",
    "pydantic",
    "evidence-packer",
    "llama-index-core",
    "haystack-ai",
    "bm25s",
    "matplotlib",
)


@dataclass(frozen=True)
class Run:
    """A timed body, and an untimed set-up that runs before each timing of it."""

    body: Callable[[], object]
    setup: Callable[[], object] = lambda: None


def best_times(runs: Sequence[Run], repeats: int) -> list[tuple[float, object]]:
    """Best wall time of each run over `repeats` rounds, and its last result.

    Rounds interleave the runs, so a burst of load from elsewhere on the machine
    hits every run alike instead of one run's whole measurement.
    """
    best: list[tuple[float, object]] = [(float("inf"), None)] * len(runs)
    for _ in range(repeats):
        for i, run in enumerate(runs):
            run.setup()
            start = time.perf_counter()
            result = run.body()
            best[i] = (min(best[i][0], time.perf_counter() - start), result)
    return best


def rates(seconds: float, requests: int, candidates: int) -> dict:
    return {
        "seconds": round(seconds, 4),
        "requests_per_s": round(requests / seconds, 1),
        "candidates_per_s": round(candidates / seconds, 1),
    }


def _fresh_runtime(shared: TokenCounter) -> PackerRuntime:
    """A cold worker: a new runtime (empty token cache, no memos) around the loaded encoding."""
    return PackerRuntime(TokenCounter(shared.encoding, shared.name))


class _CountingEncoding:
    """An encoding that adds up the tokens it produces (for an untimed pass)."""

    def __init__(self, encoding: tiktoken.Encoding) -> None:
        self._encoding = encoding
        self.tokens = 0

    def encode_ordinary(self, text: str) -> list[int]:
        out = self._encoding.encode_ordinary(text)
        self.tokens += len(out)
        return out


def tokens_encoded(
    requests: Sequence[Request], catalog: Catalog, tokens: TokenCounter, warm: bool
) -> float:
    """Tokens ours encodes per request, from a cold start or after a first pass."""
    counting = _CountingEncoding(tokens.encoding)
    runtime = PackerRuntime(TokenCounter(counting, tokens.name))  # type: ignore[arg-type]
    packer = _ours(catalog, PackingConfig(max_evidence_tokens=BUDGET), runtime)
    if warm:
        for r in requests:
            packer(r)
        counting.tokens = 0
    for r in requests:
        packer(r)
    return round(counting.tokens / len(requests), 1)


def _ours(catalog: Catalog, config: PackingConfig, runtime: PackerRuntime) -> OurPacker:
    return OurPacker(config, catalog, runtime)


def time_packers(
    requests: Sequence[Request],
    catalog: Catalog,
    tokens: TokenCounter,
    repeats: int,
    libraries: bool,
) -> list[dict]:
    """Floor and packers over one workload; throughput, ratio to the floor, tokens used."""
    texts = candidate_texts(requests)
    n_req, n_cand = len(requests), len(texts)
    encode = tokens.encoding.encode_ordinary
    count = tiktoken_counter(tokens.encoding)
    config = PackingConfig(max_evidence_tokens=BUDGET)

    def run_with(packer: Callable[[Request], Packed]) -> Run:
        return Run(lambda: [packer(r) for r in requests])

    cold = _ours(catalog, config, _fresh_runtime(tokens))
    warm = _ours(catalog, config, _fresh_runtime(tokens))

    def cold_start() -> None:
        cold.runtime = _fresh_runtime(tokens)

    def warm_up() -> None:
        for r in requests:
            warm(r)

    packers: list[tuple[str, Run]] = [
        ("ours, cold caches", Run(run_with(cold).body, cold_start)),
        ("ours, warm caches", Run(run_with(warm).body, warm_up)),
        ("naive loop", run_with(NaivePacker(BUDGET, count))),
    ]
    if libraries:
        packers += [
            ("llamaindex PromptHelper.truncate", run_with(LlamaIndexTruncate(BUDGET))),
            ("llamaindex PromptHelper.repack", run_with(LlamaIndexRepack(BUDGET))),
            ("haystack LostInTheMiddleRanker", run_with(HaystackLostInTheMiddle(BUDGET))),
        ]
    floor, *timed = best_times(
        [Run(lambda: [encode(t) for t in texts]), *(run for _, run in packers)], repeats
    )
    floor_s = floor[0]
    encoded = {
        "floor (tiktoken encode once)": round(sum(len(encode(t)) for t in texts) / n_req, 1),
        "ours, cold caches": tokens_encoded(requests, catalog, tokens, warm=False),
        "ours, warm caches": tokens_encoded(requests, catalog, tokens, warm=True),
    }
    rows = [{"packer": "floor (tiktoken encode once)", **rates(floor_s, n_req, n_cand)}]
    for (name, _), (seconds, packs) in zip(packers, timed, strict=True):
        row = {"packer": name, **rates(seconds, n_req, n_cand), **token_stats(packs, BUDGET, count)}
        row["x_floor"] = round(floor_s / seconds, 3)
        rows.append(row)
    rows[0]["x_floor"] = 1.0
    for row in rows:
        if row["packer"] in encoded:
            row["tokens_encoded"] = encoded[row["packer"]]
    return rows


def sweep(
    pool: Pool,
    catalog: Catalog,
    tokens: TokenCounter,
    sizes: Sequence[int],
    total: int,
    repeats: int,
) -> list[dict]:
    """Time per candidate of ours (cold caches) at each request size, same candidate total."""
    config = PackingConfig(max_evidence_tokens=BUDGET)
    workloads = [list(generate(pool, max(1, total // size), size, seed=size)) for size in sizes]

    def runner(requests: Sequence[Request]) -> Callable[[], None]:
        def run() -> None:
            packer = _ours(catalog, config, _fresh_runtime(tokens))
            for r in requests:
                packer(r)

        return run

    timed = best_times([Run(runner(w)) for w in workloads], repeats)
    rows = []
    for size, requests, (seconds, _) in zip(sizes, workloads, timed, strict=True):
        n_cand = sum(len(r.candidates) for r in requests)
        rows.append(
            {
                "candidates_per_request": size,
                "requests": len(requests),
                **rates(seconds, len(requests), n_cand),
                "us_per_candidate": round(1e6 * seconds / n_cand, 1),
            }
        )
    return rows


def beam_section(pool: Pool, catalog: Catalog, tokens: TokenCounter, n: int) -> list[dict]:
    """The batch pipeline on the local runner at 1 and 2 workers, against ours in a loop.

    An untimed run on a few requests first loads the modules Beam imports on
    its first run, as the loop's modules are loaded before it is timed. Each
    timed run starts with cold memos, as the loop does.
    """
    try:
        from pipelines.batch import run as run_batch
    except ImportError as err:
        return [{"packer": "beam batch", "error": f"pipelines.batch not importable: {err}"}]
    requests = list(generate(pool, n, 10, seed=11))
    n_cand = sum(len(r.candidates) for r in requests)
    config = PackingConfig(max_evidence_tokens=BUDGET)
    start = time.perf_counter()
    packer = _ours(catalog, config, _fresh_runtime(tokens))
    for r in requests:
        packer(r)
    core_s = time.perf_counter() - start
    rows = [{"packer": "ours in a loop, cold", **rates(core_s, n, n_cand), "x_core": 1.0}]
    with tempfile.TemporaryDirectory(prefix="bench-beam-") as tmp:
        req_file, cat_file, cfg_file = (
            Path(tmp) / name for name in ("req.jsonl", "cat.jsonl", "cfg.json")
        )
        req_file.write_text("".join(r.model_dump_json() + "\n" for r in requests))
        cat_file.write_text("".join(d.model_dump_json() + "\n" for d in pool.catalog()))
        cfg_file.write_text(config.model_dump_json())
        few = Path(tmp) / "few.jsonl"
        few.write_text("".join(r.model_dump_json() + "\n" for r in requests[:20]))

        def argv(requests_file: Path, workers: int, out: str) -> list[str]:
            mode = "multi_processing" if workers > 1 else "in_memory"
            return [
                f"--input={requests_file}",
                f"--catalog={cat_file}",
                f"--config={cfg_file}",
                f"--output={tmp}/{out}",
                f"--event_time={EVAL_TIME.isoformat()}",
                f"--direct_num_workers={workers}",
                f"--direct_running_mode={mode}",
            ]

        run_batch(argv(few, 1, "warm-up"))
        for workers in (1, 2):  # each run's pack step builds its own runtime
            start = time.perf_counter()
            run_batch(argv(req_file, workers, f"out{workers}"))
            seconds = time.perf_counter() - start
            rows.append(
                {
                    "packer": f"beam batch, local FnApiRunner, {workers} worker(s)",
                    **rates(seconds, n, n_cand),
                    "x_core": round(core_s / seconds, 3),
                }
            )
    return rows


def profile_core(
    requests: Sequence[Request], catalog: Catalog, tokens: TokenCounter, warm: bool
) -> str:
    """cProfile of ours, cold or after a first pass: where the time goes, by own time,
    then by cumulative time (which stage holds it)."""
    config = PackingConfig(max_evidence_tokens=BUDGET)
    packer = _ours(catalog, config, _fresh_runtime(tokens))
    if warm:
        for r in requests:
            packer(r)
    profiler = cProfile.Profile()
    profiler.enable()
    for r in requests:
        packer(r)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(20)
    stats.sort_stats("cumulative").print_stats(r"packer/", 12)
    return out.getvalue().replace(str(Path.cwd()) + "/", "")


def peak_memory(data_dir: Path, requests: int) -> dict:
    """Peak RSS of a fresh process packing `requests` streamed requests."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.speed",
            "--data-dir",
            str(data_dir),
            "--memory-child",
            str(requests),
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def peak_rss_mb() -> float:
    """This process's peak resident set size.

    Linux keeps `ru_maxrss` across exec, so a child started by a big parent
    would report the parent's peak; `VmHWM` belongs to the process's own memory.
    """
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def memory_child(data_dir: Path, requests: int) -> dict:
    """Child process: load, then pack a stream of requests; peak RSS before and after."""
    pool = Pool.load(data_dir)
    catalog = Catalog(pool.catalog())
    runtime = PackerRuntime.load()
    tokens = runtime.tokens
    config = PackingConfig(max_evidence_tokens=BUDGET)
    before = peak_rss_mb()
    for request in generate(pool, requests, 10, repeat_fraction=0.5):
        pack_request(request, catalog, config, runtime, EVAL_TIME)
    return {
        "requests": requests,
        "rss_before_mb": before,
        "peak_rss_mb": peak_rss_mb(),
        "token_cache_hit_rate": round(tokens.hits / max(1, tokens.hits + tokens.misses), 3),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="holds hotpotqa/ and ramdocs/"
    )
    parser.add_argument(
        "--requests", type=int, default=2000, help="requests in the compared workload"
    )
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    parser.add_argument("--sweep", type=int, nargs="+", default=list(SWEEP), help="sizes")
    parser.add_argument(
        "--sweep-total", type=int, default=20_000, help="candidates per sweep point"
    )
    parser.add_argument(
        "--beam-requests", type=int, default=10_000, help="0 skips the Beam section"
    )
    parser.add_argument("--memory-sizes", type=int, nargs="*", default=list(MEMORY_SIZES))
    parser.add_argument("--no-libraries", action="store_true", help="skip LlamaIndex and Haystack")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")
    parser.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        if args.memory_child is not None:
            print(json.dumps(memory_child(args.data_dir, args.memory_child)))
            return 0
        pool = Pool.load(args.data_dir)
    except DataMissingError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    catalog = Catalog(pool.catalog())
    tokens = TokenCounter.load()
    results: dict = {"machine": machine(), "budget": BUDGET, "requests": args.requests}
    with offline_cl100k_cache():
        fresh = list(generate(pool, args.requests, 10))
        results["compare"] = time_packers(
            fresh, catalog, tokens, args.repeats, not args.no_libraries
        )
        results["profile"] = profile_core(fresh, catalog, tokens, warm=False)
        results["profile_warm"] = profile_core(fresh, catalog, tokens, warm=True)
        del fresh
        repeated = list(generate(pool, args.requests, 10, repeat_fraction=0.5))
        results["repeats"] = time_packers(repeated, catalog, tokens, args.repeats, libraries=False)
        del repeated
    results["sweep"] = sweep(pool, catalog, tokens, args.sweep, args.sweep_total, args.repeats)
    if args.beam_requests:
        results["beam"] = beam_section(pool, catalog, tokens, args.beam_requests)
    results["memory"] = [peak_memory(args.data_dir, n) for n in args.memory_sizes]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
