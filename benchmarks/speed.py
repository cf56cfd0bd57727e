"""Speed of every packer on one generated workload, against the tokenizer floor.

    python -m benchmarks.speed [--data-dir ../shared/data] [--requests 2000] [--out FILE]
        [--trees main=/tmp/main-tree ...]

The floor is raw tiktoken: encoding every candidate text once, nothing else.
Every packer runs over the same pre-built requests (building them is not timed);
each figure is the best CPU time of `--repeats` interleaved runs in this one
process, so all of them see the same machine load (the Beam section, whose
workers run in parallel, is timed on the wall clock), and every figure has the
machine's 1-minute load average before its round beside it. Sections:
- compare: fresh texts (no repeats); floor, ours with cold caches (empty token
  cache, no memoized text facts) and warm ones (the workload packed once
  before), timed on `pack_request` alone (reading its prompt back for the token
  columns is the benchmark's work, not packing), the naive loop, LlamaIndex
  truncate/repack, Haystack; and the tokens each of ours and the floor encode per
  request;
- repeats: half of each request's candidates recur across requests;
- retrieval: shapes real retrieval returns, per candidate, each run from a fresh
  runtime: whole paragraphs, chunks of few documents (10 candidates from 2
  documents: every revision is searched for near duplicates), long passages (4
  paragraphs each), and same-document paragraphs (10 paragraph-sized chunks of 2
  documents, HotpotQA's);
- sweep: candidates per request 10, 100, 300, 1,000, 3,000 at a constant candidate
  total;
- beam: the batch job through the CLI (`python -m pipelines.cli batch`, a
  process of its own, startup included) at 1 and 2 workers, vs ours in a loop
  on the same requests and the job's own work in a plain loop without Beam
  (`plain_job`); the load average before each run is recorded; with
  `--beam-trees NAME=DIR`, other source trees' batch job in the same rounds;
- changes (with `--trees`): the compared workload (floor, ours cold and warm),
  the retrieval and 1,000-candidate workloads with
  the `packer` and `schemas` of other source trees (e.g. `git archive <commit>
  packer schemas | tar -x -C DIR` per commit; a tree with `packer/_native.c`
  counts its C kernels only once built there: copy the built module in), each in
  a process of its own, rounds interleaved: what each change bought;
- memory: peak RSS of ours over 1k, 10k, 100k streamed requests (subprocesses);
- profiles: cProfile of ours with cold and with warm caches (part of compare).

`--sections compare changes ...` runs only those (all by default); with `--merge`
they are written into the results file, whose other sections stay under the stamp
of the run that measured them.

Every process of the benchmark packs with the garbage collector set as the
job's packing workers set it (`transforms.collector`: full collections rare),
for every packer it times alike. Without it the figures depended on what else
the process had imported: a larger heap makes full collections rarer, and
warm packing in a child of the changes section measured 1.6x slower once
datasketch (and the scipy it loads) was no longer imported at start.
"""

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
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
from transforms.collector import make_full_collections_rare

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "speed.json"
BUDGET = 1024
SWEEP = (10, 100, 300, 1000, 3000)
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


@dataclass(frozen=True)
class Timed:
    """A run's best CPU time, its last result, and the machine's 1-minute load average
    before the round that gave the best time."""

    seconds: float
    result: object
    load: float


def best_times(runs: Sequence[Run], repeats: int) -> list[Timed]:
    """Best CPU time of each run over `repeats` rounds, its last result, and the load.

    Rounds interleave the runs, so a burst of load from elsewhere on the machine
    hits every run alike instead of one run's whole measurement; and every run
    is single-threaded, so its CPU time is what it costs, where wall time on a
    shared machine adds whatever ran meanwhile. The load average goes beside
    each figure: on a busy machine Python slows more than the tokenizer's
    compiled loop, so even a ratio drifts with it.
    """
    best = [Timed(float("inf"), None, 0.0)] * len(runs)
    for _ in range(repeats):
        load = os.getloadavg()[0]
        for i, run in enumerate(runs):
            run.setup()
            start = time.process_time()
            result = run.body()
            seconds = time.process_time() - start
            kept = best[i] if best[i].seconds <= seconds else Timed(seconds, None, load)
            best[i] = Timed(kept.seconds, result, kept.load)
    return best


def rates(seconds: float, requests: int, candidates: int) -> dict:
    return {
        "seconds": round(seconds, 4),
        "requests_per_s": round(requests / seconds, 1),
        "candidates_per_s": round(candidates / seconds, 1),
    }


def _fresh_runtime(shared: TokenCounter) -> PackerRuntime:
    """A cold worker: a new runtime (empty token cache, no memos) around the loaded encoding."""
    return PackerRuntime(shared.fresh())


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
            packer.pack(r)
        counting.tokens = 0
    for r in requests:
        packer.pack(r)
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

    def run_with(packer: Callable[[Request], object]) -> Run:
        return Run(lambda: [packer(r) for r in requests])

    cold = _ours(catalog, config, _fresh_runtime(tokens))
    warm = _ours(catalog, config, _fresh_runtime(tokens))

    def cold_start() -> None:
        cold.runtime = _fresh_runtime(tokens)

    def warm_up() -> None:
        for r in requests:
            warm.pack(r)

    packers: list[tuple[str, Run]] = [  # ours is timed packing alone, its results adapted after
        ("ours, cold caches", Run(run_with(cold.pack).body, cold_start)),
        ("ours, warm caches", Run(run_with(warm.pack).body, warm_up)),
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
    floor_s = floor.seconds
    encoded = {
        "floor (tiktoken encode once)": round(sum(len(encode(t)) for t in texts) / n_req, 1),
        "ours, cold caches": tokens_encoded(requests, catalog, tokens, warm=False),
        "ours, warm caches": tokens_encoded(requests, catalog, tokens, warm=True),
    }
    rows = [{"packer": "floor (tiktoken encode once)", **rates(floor_s, n_req, n_cand)}]
    rows[0]["load_before"] = round(floor.load, 2)
    for (name, _), run in zip(packers, timed, strict=True):
        packs = [r if isinstance(r, Packed) else OurPacker.adapt(r) for r in run.result]  # type: ignore[union-attr]
        row = {"packer": name, **rates(run.seconds, n_req, n_cand)}
        row |= token_stats(packs, BUDGET, count)
        row["x_floor"] = round(floor_s / run.seconds, 3)
        row["load_before"] = round(run.load, 2)
        rows.append(row)
    rows[0]["x_floor"] = 1.0
    for row in rows:
        if row["packer"] in encoded:
            row["tokens_encoded"] = encoded[row["packer"]]
    return rows


SAME_DOCUMENT = "same-document paragraphs (2 documents x 5)"
RETRIEVAL_SHAPES = {
    "paragraphs": {},
    "chunks of 2 documents": {"chunks": 5},
    "long passages (4 paragraphs)": {"join": 4},
    SAME_DOCUMENT: {"chunks": 5, "join": 5},
}
"""Workload shapes (`benchmarks.workload.generate` options) at 10 candidates a request:
the first is the reference the others are compared with, per candidate. Chunks of 2
documents are short (about 30 tokens); the same-document paragraphs are 5
consecutive HotpotQA paragraphs cut into 5 chunks, each about a paragraph long
(`HOTPOTQA_ONLY`): what a retriever returns when two documents hold the answer."""
HOTPOTQA_ONLY = {SAME_DOCUMENT}
"""Shapes drawn from the HotpotQA paragraphs alone (real Wikipedia paragraphs in order)."""


def _cold_run(
    catalog: Catalog, tokens: TokenCounter, requests: Sequence[Request]
) -> Callable[[], None]:
    """Pack `requests` from a cold start (a fresh runtime), as a timed body."""
    config = PackingConfig(max_evidence_tokens=BUDGET)

    def run() -> None:
        packer = _ours(catalog, config, _fresh_runtime(tokens))
        for r in requests:
            packer.pack(r)

    return run


PLAIN_JOB = "the job's work in a plain loop (parse, pack, rows)"


def plain_job(
    catalog: Catalog, tokens: TokenCounter, requests_file: Path, out: Path
) -> dict[str, float]:
    """The batch job's own work on one core, without Beam: seconds of each part.

    Each record is parsed as the job parses it (`parse_record`: the strict
    decode and validation), packed from a cold start with its prompt formatted
    as a line, and the rows are encoded as the sinks encode them and written
    (manifests and exclusions as Parquet with the models' schemas, prompt lines
    as text). What the 1-worker job costs beyond this and its start is Beam's:
    moving, coding and checking elements between its stages.

    The job's modules are imported here, not with this module: a child of the
    changes section runs this module against an older tree's `packer` and
    `schemas`, which today's `transforms` may not import with.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from packer.parsing.names import DEFAULT_MAX_RECORD_BYTES
    from packer.parsing.request_records import parse_record
    from schemas import ExclusionRecord, ManifestRow
    from schemas.arrow import arrow_schema
    from schemas.prompt_formats import format_line
    from transforms.sink_rows import BATCH_ROWS, arrow_encoder

    config = PackingConfig(max_evidence_tokens=BUDGET)
    fmt = config.prompt_format
    clock = time.process_time
    started = clock()
    with requests_file.open("rb") as lines_in:
        parsed = [parse_record("bench", line, DEFAULT_MAX_RECORD_BYTES) for line in lines_in]
    requests = [p[1][1] for p in parsed if isinstance(p, tuple)]
    parse_s, started = clock() - started, clock()
    packer = _ours(catalog, config, _fresh_runtime(tokens))
    results = [packer.pack(r) for r in requests]
    lines = [format_line(r.prompt, r.manifest.budget.reserved_answer, fmt) for r in results]
    pack_s, started = clock() - started, clock()
    out.mkdir(parents=True, exist_ok=True)
    for name, model, rows in (
        ("manifests", ManifestRow, [r.manifest for r in results]),
        ("exclusions", ExclusionRecord, [x for r in results for x in r.exclusions]),
    ):
        encode = arrow_encoder(model)
        batches = [encode(rows[i : i + BATCH_ROWS]) for i in range(0, len(rows), BATCH_ROWS)]
        pq.write_table(pa.Table.from_batches(batches, arrow_schema(model)), out / f"{name}.parquet")
    (out / "prompts.jsonl").write_text("".join(line + "\n" for line in lines))
    return {"parse": parse_s, "pack": pack_s, "rows": clock() - started}


def retrieval(
    pool: Pool, catalog: Catalog, tokens: TokenCounter, requests: int, repeats: int
) -> list[dict]:
    """Time per candidate of ours (cold caches) on each retrieval shape, interleaved."""
    workloads = {
        name: list(
            generate(pool.hotpotqa_only() if name in HOTPOTQA_ONLY else pool, requests, 10,
                     seed=13, **shape)
        )
        for name, shape in RETRIEVAL_SHAPES.items()
    }  # fmt: skip
    timed = best_times([Run(_cold_run(catalog, tokens, w)) for w in workloads.values()], repeats)
    rows = []
    for (name, reqs), run in zip(workloads.items(), timed, strict=True):
        texts = candidate_texts(reqs)
        tokens_each = sum(len(tokens.encoding.encode_ordinary(t)) for t in texts) / len(texts)
        rows.append(
            {
                "workload": name,
                "requests": len(reqs),
                "candidates": len(texts),
                "tokens_per_candidate": round(tokens_each, 1),
                "us_per_candidate": round(1e6 * run.seconds / len(texts), 1),
                "load_before": round(run.load, 2),
            }
        )
    for row in rows:
        row["x_paragraphs"] = round(row["us_per_candidate"] / rows[0]["us_per_candidate"], 2)
    return rows


def changes_child(data_dir: Path, requests: int, sweep_total: int) -> dict[str, float]:
    """Child process of the changes section: us per candidate of each workload, once;
    the first three are the compared workload's floor and ours cold and warm."""
    pool = Pool.load(data_dir)
    catalog = Catalog(pool.catalog())
    tokens = TokenCounter.load()
    fresh = list(generate(pool, requests, 10))
    # A few requests of each shape first, untimed: what a worker imports or builds once
    # (an older tree's datasketch, at its first request with chunks of one revision) is no
    # cost per candidate.
    retrieval(pool, catalog, tokens, 20, repeats=1)
    compared = {r["packer"]: r for r in time_packers(fresh, catalog, tokens, 1, libraries=False)}
    out = {
        f"{name}, us/candidate": round(1e6 / compared[packer]["candidates_per_s"], 1)
        for name, packer in (
            ("floor", "floor (tiktoken encode once)"),
            ("cold", "ours, cold caches"),
            ("warm", "ours, warm caches"),
        )
    }
    out |= {row["workload"]: row["us_per_candidate"] for row in retrieval(
        pool, catalog, tokens, requests, repeats=1
    )}  # fmt: skip
    [big] = sweep(pool, catalog, tokens, [1000], sweep_total, repeats=1)
    out["1,000 candidates"] = big["us_per_candidate"]
    return out


def changes(
    data_dir: Path, trees: dict[str, Path], requests: int, sweep_total: int, repeats: int
) -> list[dict]:
    """Each tree's packer on the same workloads, a process per tree and round, rounds
    interleaved; the best figure of each. A tree is a directory holding `packer/` and
    `schemas/`, put first on the child's path."""
    best: dict[str, dict[str, float]] = {name: {} for name in trees}
    loads: dict[str, list[float]] = {name: [] for name in trees}
    root = Path(__file__).resolve().parent.parent
    for _ in range(repeats):
        for name, tree in trees.items():
            loads[name].append(round(os.getloadavg()[0], 2))
            tree = tree.resolve()
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(root)])}
            command = [
                sys.executable,
                "-m",
                "benchmarks.speed",
                "--data-dir",
                str(data_dir.resolve()),
            ]
            command += ["--changes-child", str(requests), "--sweep-total", str(sweep_total)]
            done = subprocess.run(  # run from the tree: `-m` puts the working directory first
                command, capture_output=True, text=True, cwd=tree, env=env
            )
            if done.returncode != 0:
                raise RuntimeError(f"tree {name} ({tree}) failed:\n{done.stderr[-2000:]}")
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            for key, value in figures.items():
                best[name][key] = min(value, best[name].get(key, float("inf")))
    rows = [
        {"tree": name, **figures, "load averages before": " / ".join(map(str, loads[name]))}
        for name, figures in best.items()
    ]
    for row in rows:  # each tree's own floor: a drift in the machine's speed cancels out
        floor = row.get("floor, us/candidate")
        for mode in ("cold", "warm"):
            if floor and row.get(f"{mode}, us/candidate"):
                row[f"{mode}, x floor"] = round(floor / row[f"{mode}, us/candidate"], 3)
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
    workloads = [list(generate(pool, max(1, total // size), size, seed=size)) for size in sizes]
    timed = best_times([Run(_cold_run(catalog, tokens, w)) for w in workloads], repeats)
    rows = []
    for size, requests, run in zip(sizes, workloads, timed, strict=True):
        n_cand = sum(len(r.candidates) for r in requests)
        rows.append(
            {
                "candidates_per_request": size,
                "requests": len(requests),
                **rates(run.seconds, len(requests), n_cand),
                "us_per_candidate": round(1e6 * run.seconds / n_cand, 1),
                "load_before": round(run.load, 2),
            }
        )
    for row in rows:
        row["x_smallest"] = round(row["us_per_candidate"] / rows[0]["us_per_candidate"], 2)
    return rows


ROOT = Path(__file__).resolve().parent.parent


def _cli_run(argv: list[str], tree: Path = ROOT) -> tuple[float, float]:
    """Wall and CPU seconds (the process and its workers) of one CLI run of `tree`'s code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "batch", *argv],
        capture_output=True,
        check=True,
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def beam_section(
    pool: Pool,
    catalog: Catalog,
    tokens: TokenCounter,
    n: int,
    repeats: int = 1,
    trees: dict[str, Path] | None = None,
) -> list[dict]:
    """The batch job through the CLI at 1 and 2 workers, against ours in a loop.

    Each CLI run is a process of its own, as a user starts it: its figures
    include the start (imports, pipeline construction, tokenizer and catalog
    loads), which a run of a few requests measures alone. Rounds interleave
    the loop and the runs, and the load average before each is kept: on a
    shared machine a second worker only helps when a core is free. `trees`
    (name -> source tree, e.g. an earlier commit) add their own 1- and
    2-worker runs to each round: what a change to the job bought.
    """
    requests = list(generate(pool, n, 10, seed=11))
    n_cand = sum(len(r.candidates) for r in requests)
    config = PackingConfig(max_evidence_tokens=BUDGET)
    with tempfile.TemporaryDirectory(prefix="bench-beam-") as tmp:
        req_file, cat_file, cfg_file, few = (
            Path(tmp) / name for name in ("req.jsonl", "cat.jsonl", "cfg.json", "few.jsonl")
        )
        req_file.write_text("".join(r.model_dump_json() + "\n" for r in requests))
        cat_file.write_text("".join(d.model_dump_json() + "\n" for d in pool.catalog()))
        cfg_file.write_text(config.model_dump_json())
        few.write_text("".join(r.model_dump_json() + "\n" for r in requests[:20]))

        def argv(requests_file: Path, workers: int, out: str = "out") -> list[str]:
            mode = "multi_processing" if workers > 1 else "in_memory"
            return [
                f"--input={requests_file}",
                f"--catalog={cat_file}",
                f"--config={cfg_file}",
                f"--output={tmp}/{out}{workers}",
                "--overwrite",
                f"--event_time={EVAL_TIME.isoformat()}",
                f"--direct_num_workers={workers}",
                f"--direct_running_mode={mode}",
            ]

        def core() -> tuple[float, float]:
            wall, cpu = time.perf_counter(), time.process_time()
            _cold_run(catalog, tokens, requests)()
            return time.perf_counter() - wall, time.process_time() - cpu

        parts: dict[float, dict[str, float]] = {}
        """Each plain run's parts, by its wall time: the best run's are reported."""

        def plain() -> tuple[float, float]:
            wall, cpu = time.perf_counter(), time.process_time()
            seconds = plain_job(catalog, tokens, req_file, Path(tmp) / "plain")
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            parts[wall] = seconds
            return wall, cpu

        runs: dict[str, Callable[[], tuple[float, float]]] = {
            "ours in a loop, cold": core,
            PLAIN_JOB: plain,
            "evpack batch, 20 requests (the start alone)": lambda: _cli_run(argv(few, 1)),
            "evpack batch, 1 worker": lambda: _cli_run(argv(req_file, 1)),
            "evpack batch, 2 workers": lambda: _cli_run(argv(req_file, 2)),
        }
        for name, tree in (trees or {}).items():
            for workers in (1, 2):
                label = f"evpack batch, {workers} worker{'s' if workers > 1 else ''} ({name})"
                runs[label] = partial(_cli_run, argv(req_file, workers, name), tree)
        best: dict[str, tuple[float, float, float]] = {}
        for _ in range(repeats):
            for name, run in runs.items():
                load = os.getloadavg()[0]
                wall, cpu = run()
                if name not in best or wall < best[name][0]:
                    best[name] = (wall, cpu, load)
    core_s = best["ours in a loop, cold"][0]
    rows = []
    for name, (wall, cpu, load) in best.items():
        size = 20 if "20 requests" in name else n
        row = {
            "packer": name,
            **rates(wall, size, size * n_cand // n),
            "cpu_seconds": round(cpu, 2),
        }
        row["load_before"] = round(load, 2)
        if name == PLAIN_JOB:
            row |= {f"{part}_seconds": round(t, 2) for part, t in parts[wall].items()}
        if size == n:
            row["x_core"] = round(core_s / wall, 3)
        if size == n and name.startswith("evpack"):
            tree = name.partition(" (")[2]  # the tree's own 1-worker run
            one = best["evpack batch, 1 worker" + (f" ({tree}" if tree else "")][0]
            row["x_one_worker"] = round(one / wall, 3)
        rows.append(row)
    return rows


STAGES = {
    ("gates.py", "apply_gates"): "gates",
    ("dedup.py", "deduplicate"): "dedup, reprints, conflicts",
    ("resolution.py", "resolve"): "conflict resolution",
    ("pack.py", "_policy"): "selection policy (question terms, sources)",
    ("pack.py", "_evidence_budget"): "budget",
    ("select.py", "select"): "selection (exact counts, sentence units)",
    ("pack.py", "_render"): "rendering, notes",
    ("outputs.py", "assemble"): "prompt, manifest and exclusion rows",
    ("~", "<method 'encode_ordinary' of 'builtins.CoreBPE' objects>"): "tokenizer (encode)",
}
"""Functions whose cumulative time is a stage of packing: (file name, function)."""


def stage_shares(profiler: cProfile.Profile) -> dict[str, float]:
    """Each stage's share of `pack_request`'s cumulative time in a profile.

    cProfile adds a cost per Python call, so stages that make many small calls
    read larger than they run; the shares say where to look, the timings above
    say how fast.
    """
    cumulative: dict[tuple[str, str], float] = {}
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    for (path, _, function), (_, _, _, cum, _) in stats.items():
        key = (Path(path).name, function)
        if key in STAGES or key == ("pack.py", "pack_request"):
            cumulative[key] = cumulative.get(key, 0.0) + cum
    total = cumulative.get(("pack.py", "pack_request")) or 1.0
    return {label: round(cumulative.get(key, 0.0) / total, 3) for key, label in STAGES.items()}


def profile_core(
    requests: Sequence[Request], catalog: Catalog, tokens: TokenCounter, warm: bool
) -> tuple[str, dict[str, float]]:
    """cProfile of ours, cold or after a first pass: where the time goes, by own time,
    then by cumulative time (which stage holds it); and each stage's share."""
    config = PackingConfig(max_evidence_tokens=BUDGET)
    packer = _ours(catalog, config, _fresh_runtime(tokens))
    if warm:
        for r in requests:
            packer.pack(r)
    profiler = cProfile.Profile()
    profiler.enable()
    for r in requests:
        packer.pack(r)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(20)
    stats.sort_stats("cumulative").print_stats(r"packer/", 12)
    return out.getvalue().replace(str(Path.cwd()) + "/", ""), stage_shares(profiler)


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


SECTION_KEYS = {"compare": ("compare", "profile", "profile_warm", "stages")}
"""The results' keys a section writes (the others write their own name)."""


def merged(results: dict, earlier: dict) -> dict:
    """This run's sections, and those of `earlier` (a results file) it did not rerun,
    each listed under `carried` with the stamp of the run that measured it: one report
    from a partial rerun, without passing off the kept figures as this commit's."""
    kept = [
        section
        for section in SECTIONS
        if section not in results
        and all(key in earlier for key in SECTION_KEYS.get(section, (section,)))
    ]
    out = dict(results)
    for section in kept:
        out |= {key: earlier[key] for key in SECTION_KEYS.get(section, (section,))}
    stamps = [
        {"sections": [s for s in entry["sections"] if s in kept], "machine": entry["machine"]}
        for entry in earlier.get("carried", [])
    ]
    stamps = [entry for entry in stamps if entry["sections"]]
    own = [s for s in kept if not any(s in entry["sections"] for entry in stamps)]
    if own:
        stamps.append({"sections": own, "machine": earlier["machine"]})
    if stamps:
        out["carried"] = stamps
    return out


def _named(tree: str) -> tuple[str, str]:
    """A `NAME=DIR` flag value as (name, dir)."""
    name, _, path = tree.partition("=")
    return name, path


SECTIONS = ("compare", "repeats", "retrieval", "sweep", "changes", "beam", "memory")
"""The sections of the benchmark, in the order they run (`--sections`, all by default)."""


def compare_section(
    pool: Pool, catalog: Catalog, tokens: TokenCounter, args: argparse.Namespace
) -> dict:
    """The compared workload of fresh texts: every packer against the floor, the profiles
    of ours cold and warm, and each stage's share of them."""
    fresh = list(generate(pool, args.requests, 10))
    results = {"compare": time_packers(fresh, catalog, tokens, args.repeats, not args.no_libraries)}
    results["profile"], cold_stages = profile_core(fresh, catalog, tokens, warm=False)
    results["profile_warm"], warm_stages = profile_core(fresh, catalog, tokens, warm=True)
    results["stages"] = [
        {"stage": stage, "cold": cold_stages[stage], "warm": warm_stages[stage]}
        for stage in STAGES.values()
    ]
    return results


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
        "--retrieval-requests", type=int, default=500, help="requests per retrieval workload"
    )
    parser.add_argument(
        "--beam-requests", type=int, default=20_000, help="0 skips the Beam section"
    )
    parser.add_argument(
        "--beam-repeats", type=int, default=1, help="rounds of the Beam section (minutes each)"
    )
    parser.add_argument(
        "--beam-trees",
        nargs="*",
        default=[],
        metavar="NAME=DIR",
        help="source trees whose batch job also runs in the Beam section, rounds interleaved",
    )
    parser.add_argument(
        "--trees",
        nargs="*",
        default=[],
        metavar="NAME=DIR",
        help="source trees (packer/, schemas/) compared in the changes section, in order",
    )
    parser.add_argument("--memory-sizes", type=int, nargs="*", default=list(MEMORY_SIZES))
    parser.add_argument("--no-libraries", action="store_true", help="skip LlamaIndex and Haystack")
    parser.add_argument(
        "--sections",
        nargs="+",
        choices=SECTIONS,
        default=list(SECTIONS),
        help="run only these sections (changes needs --trees, beam --beam-requests)",
    )
    parser.add_argument(
        "--out", type=Path, help=f"JSON results file ({DEFAULT_OUT} with every section)"
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="keep the sections of --out that this run does not rerun, stamped as kept",
    )
    parser.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--changes-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.out is None and set(args.sections) != set(SECTIONS) and not args.merge:
        parser.error(
            "--sections needs --out or --merge: the report reads every section from the default"
        )
    args.out = args.out or DEFAULT_OUT
    make_full_collections_rare()
    try:
        if args.memory_child is not None:
            print(json.dumps(memory_child(args.data_dir, args.memory_child)))
            return 0
        if args.changes_child is not None:
            with offline_cl100k_cache():
                figures = changes_child(args.data_dir, args.changes_child, args.sweep_total)
            print(json.dumps(figures))
            return 0
        pool = Pool.load(args.data_dir)
    except DataMissingError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    catalog = Catalog(pool.catalog())
    tokens = TokenCounter.load()
    results: dict = {"machine": machine(), "budget": BUDGET, "requests": args.requests}
    run = set(args.sections)
    with offline_cl100k_cache():
        if "compare" in run:
            results |= compare_section(pool, catalog, tokens, args)
        if "repeats" in run:
            repeated = list(generate(pool, args.requests, 10, repeat_fraction=0.5))
            results["repeats"] = time_packers(
                repeated, catalog, tokens, args.repeats, libraries=False
            )
            del repeated
        if "retrieval" in run:
            results["retrieval"] = retrieval(
                pool, catalog, tokens, args.retrieval_requests, args.repeats
            )
    if "sweep" in run:
        results["sweep"] = sweep(pool, catalog, tokens, args.sweep, args.sweep_total, args.repeats)
    if args.trees and "changes" in run:
        trees = dict(map(_named, args.trees))
        results["changes"] = changes(
            args.data_dir,
            {name: Path(tree) for name, tree in trees.items()},
            args.retrieval_requests,
            args.sweep_total,
            args.repeats,
        )
    if args.beam_requests and "beam" in run:
        beam_trees = {name: Path(tree) for name, tree in map(_named, args.beam_trees)}
        results["beam"] = beam_section(
            pool, catalog, tokens, args.beam_requests, args.beam_repeats, beam_trees
        )
    if "memory" in run:
        results["memory"] = [peak_memory(args.data_dir, n) for n in args.memory_sizes]
    if args.merge and args.out.exists():
        results = merged(results, json.loads(args.out.read_text()))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
