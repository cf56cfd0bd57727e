"""Run the batch job in tests and read every output back with pyarrow / json."""

import glob
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline

from pipelines.batch import build
from pipelines.options.jobs import resolve
from schemas.run import RUN_FIELDS

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
EVENT_TIME = "2026-11-15T12:00:00Z"


@dataclass(frozen=True)
class Outputs:
    """Every output of one run, as plain rows."""

    prompts: list[dict[str, Any]]
    manifests: list[dict[str, Any]]
    exclusions: list[dict[str, Any]]
    counts: list[dict[str, Any]]
    dead_letters: list[dict[str, Any]]
    run_ids: frozenset[str | None] = field(default=frozenset(), compare=False)
    """The run ids the audit rows carry, taken out of the rows (they differ between runs
    of the same inputs; `schemas.run.RUN_FIELDS`)."""


def flags(input_path: Path, out: Path, *extra: str) -> list[str]:
    """Flags of a run on the sample catalog and config, at a fixed event time."""
    return [
        f"--input={input_path}",
        f"--catalog={SAMPLES / 'catalog.jsonl'}",
        f"--config={SAMPLES / 'config.yaml'}",
        f"--output={out}",
        f"--event_time={EVENT_TIME}",
        "--runner=FnApiRunner",
        *extra,
    ]


def run_test_pipeline(argv: list[str]) -> None:
    """Build the batch job on a TestPipeline and run it to completion."""
    options = PipelineOptions(argv)
    settings = resolve(options)
    pipeline = TestPipeline(options=options)
    build(pipeline, settings)
    pipeline.run().wait_until_finish()


def _jsonl(pattern: str) -> list[dict[str, Any]]:
    rows = []
    for path in sorted(glob.glob(pattern)):
        with open(path, encoding="utf-8") as handle:
            rows += [json.loads(line) for line in handle if line.strip()]
    return rows


def _parquet(pattern: str) -> list[dict[str, Any]]:
    files = sorted(glob.glob(pattern))
    assert files, f"no Parquet file matches {pattern}"
    rows = []
    for path in files:
        rows += pq.read_table(path).to_pylist()
    return rows


def read_outputs(out: Path) -> Outputs:
    """All outputs under `out`, each sorted by request_id (and evidence_id), the run ids of
    the audit rows aside."""

    def key(row: dict[str, Any]) -> tuple[str, str]:
        return (row.get("request_id") or "", row.get("evidence_id") or row.get("payload", ""))

    run_ids: set[str | None] = set()

    def audit(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        run_ids.update(row.pop(name) for row in rows for name in RUN_FIELDS)
        return rows

    outputs = Outputs(
        prompts=sorted(_jsonl(f"{out}/prompts/prompts-*.jsonl"), key=key),
        manifests=sorted(audit(_parquet(f"{out}/manifests/manifests-*.parquet")), key=key),
        exclusions=sorted(audit(_parquet(f"{out}/exclusions/exclusions-*.parquet")), key=key),
        counts=sorted(
            audit(_parquet(f"{out}/exclusion_counts/exclusion_counts-*.parquet")),
            key=lambda r: (r["tenant_id"], r["reason"]),
        ),
        dead_letters=sorted(audit(_jsonl(f"{out}/dead_letters/dead_letters-*.jsonl")), key=key),
    )
    return replace(outputs, run_ids=frozenset(run_ids))


def input_lines(path: Path) -> list[str]:
    """The non-blank lines of a JSONL input: one record each."""
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
