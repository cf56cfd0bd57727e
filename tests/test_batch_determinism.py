"""Determinism: 1 or 2 workers, any input order: byte-identical prompts and manifests."""

import json
import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from schemas.run import RUN_FIELDS
from tests.batch_run import SAMPLES, flags, input_lines, run_test_pipeline


def _prompt_lines(out: Path) -> list[str]:
    """The prompt JSON lines exactly as written, sorted by request_id."""
    lines = [line for path in out.glob("prompts/*.jsonl") for line in input_lines(path)]
    return sorted(lines, key=lambda line: json.loads(line)["request_id"])


def _manifest_rows(out: Path) -> list[str]:
    """Manifest rows as canonical JSON, sorted by request_id, without the run id (which
    names the run, not what it packed: `schemas.run.RUN_FIELDS`)."""
    rows = [
        row for path in out.glob("manifests/*.parquet") for row in pq.read_table(path).to_pylist()
    ]
    assert all(row["run_id"] for row in rows), "every manifest names its run"
    return [
        json.dumps(
            {k: v for k, v in row.items() if k not in RUN_FIELDS}, sort_keys=True, default=str
        )
        for row in sorted(rows, key=lambda r: r["request_id"])
    ]


@pytest.fixture(scope="module")
def shuffled_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lines = input_lines(SAMPLES / "requests.jsonl")
    random.Random(7).shuffle(lines)
    path = tmp_path_factory.mktemp("shuffled") / "requests.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_one_and_two_workers_and_any_order_give_identical_bytes(
    tmp_path: Path, shuffled_input: Path
) -> None:
    runs = {
        "one": (SAMPLES / "requests.jsonl", ["--direct_num_workers=1"]),
        "two": (
            SAMPLES / "requests.jsonl",
            ["--direct_num_workers=2", "--direct_running_mode=multi_processing"],
        ),
        "shuffled": (
            shuffled_input,
            ["--direct_num_workers=2", "--direct_running_mode=multi_threading"],
        ),
    }
    prompts, manifests = {}, {}
    for name, (path, extra) in runs.items():
        run_test_pipeline(flags(path, tmp_path / name, *extra))
        prompts[name] = _prompt_lines(tmp_path / name)
        manifests[name] = _manifest_rows(tmp_path / name)
    assert len(prompts["one"]) == len(manifests["one"]) == 28
    assert prompts["one"] == prompts["two"] == prompts["shuffled"]
    assert manifests["one"] == manifests["two"] == manifests["shuffled"]
