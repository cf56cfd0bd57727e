"""Progress of a local batch run: read of the input's total, packed of read, rate and time
left, one line for the run whatever the number of workers; the summary at the end as before."""

import logging
import re
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.batch import run
from tests.batch_run import SAMPLES, flags, input_lines
from transforms import progress
from transforms.progress import InputSize, Progress, Stage, input_size

REQUESTS = SAMPLES / "requests.jsonl"


def _number(pattern: str, line: str) -> int:
    found = re.search(pattern, line)
    assert found, (pattern, line)
    return int(found.group(1).replace(",", ""))


@pytest.mark.parametrize("mode", ["in_memory", "multi_processing"])
def test_progress_counts_every_record_and_request_of_the_run(
    mode: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress, "PROGRESS_SECONDS", 0.2)
    boards = tmp_path / "tmp"  # this run's own temp folder: /tmp is shared with other runs
    boards.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(boards))
    caplog.set_level(logging.DEBUG, logger=progress.__name__)
    workers = ["--direct_num_workers=2", f"--direct_running_mode={mode}"]
    finished = run(flags(REQUESTS, tmp_path / "out", *workers))
    lines = [r.getMessage() for r in caplog.records if r.name == progress.__name__]
    final = lines[-1]
    assert final.endswith("(final)")
    summary = finished.summary
    assert _number(r"read ([\d,]+) records", final) == summary.records_in
    assert summary.records_in == len(input_lines(REQUESTS))
    assert "(100%)" in final  # every byte of the file: no blank line, `\n` line breaks
    assert _number(r"packed ([\d,]+)", final) == summary.prompts_out
    assert _number(r"refused ([\d,]+)", final) == summary.dead_letters_total
    assert "of them (100%)" in final  # every record read was packed or refused
    assert not list(boards.glob("evpack-progress-*"))  # cleaned up


def test_the_total_is_the_bytes_of_jsonl_or_the_rows_of_parquet(tmp_path: Path) -> None:
    assert input_size(str(REQUESTS), "jsonl") == InputSize("bytes", REQUESTS.stat().st_size)
    for k in range(2):
        table = pa.table({"request_id": [f"r{k}-{i}" for i in range(7 + k)]})
        pq.write_table(table, tmp_path / f"part-{k}.parquet")
    assert input_size(f"{tmp_path}/*.parquet", "parquet") == InputSize("records", 15)
    (tmp_path / "in.jsonl.gz").write_bytes(b"")
    assert input_size(f"{tmp_path}/*.gz", "jsonl") == InputSize("bytes", None)
    (tmp_path / "part-2.parquet").write_bytes(b'{"request_id": "not parquet"}\n')
    assert input_size(f"{tmp_path}/*.parquet", "parquet") == InputSize("records", None)


@given(
    total=st.integers(1, 10**12),
    share=st.floats(0, 1),
    seconds=st.floats(0, 10**5),
    packed_share=st.none() | st.floats(0, 1),
    refused=st.integers(0, 10**12),
)
def test_the_line_says_done_of_total_and_never_more_than_all(
    total: int, share: float, seconds: float, packed_share: float | None, refused: int
) -> None:
    done = int(total * share)
    read = Stage(count=done, bytes=done, seconds=seconds)
    packed = None if packed_share is None else Stage(int(done * packed_share), 0, seconds)
    line = Progress(read, packed, InputSize("bytes", total), refused).render()
    percents = [int(p) for p in re.findall(r"\((\d+)%\)", line)]
    assert len(percents) == (1 if packed is None else 2)
    assert all(0 <= p <= 100 for p in percents)
    assert abs(percents[0] - 100 * done / total) <= 0.5 + 1e-9
    if done and packed is None and done < total:
        assert "left to read" in line


def test_an_unknown_total_gives_what_was_read_and_the_rate() -> None:
    line = Progress(Stage(10, 5 << 20, 2.0), None, InputSize("bytes", None)).render()
    assert line == "evpack progress: read 10 records, 5.0 MiB, 2.5 MiB/s"
