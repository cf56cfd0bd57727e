"""Progress of a local batch run against the size of its input: records or bytes read of
the total, the rate and the time left, one line for the whole run whatever the workers.

The total is known before the run starts: the sum of the input files' sizes (plain
JSONL), or of their row counts from the Parquet footers; compressed JSONL has no
known total, so its line gives what was read and the rate only. `TrackProgress`,
right after the read, counts each worker's records and bytes and writes them, at
most once a second, to its own small file on a local progress board (a temp
directory made for the run), with the total and the wall time of its first record;
`ProgressMonitor`, a thread of the process that started the run, sums the board
every `PROGRESS_SECONDS` and logs one line, the rate counted from the first record
read (not from the start, which loads the tokenizer and catalog).

Rejected: logging from the workers (with `--direct_running_mode=multi_processing`
each worker is a process whose INFO lines Beam forwards at the level of its own
loggers, which the CLI keeps at WARNING: nothing shows for minutes; and N
workers would print N partial lines without a total); and Beam metrics (the local
runner gives them only when the run is over). The board is local: on a remote
runner (Dataflow) the job's own console shows progress and the monitor stays
silent.
"""

import json
import logging
import os
import shutil
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apache_beam as beam
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from transforms.names import FileFormat
from transforms.record_files import is_compressed, matching_files

PROGRESS_SECONDS = 10.0
"""How often the run's progress line is logged."""
FLUSH_SECONDS = 1.0
"""How often a worker writes its counts to the board, at most."""

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class InputSize:
    """What a run will read: `total` records or bytes (`unit`), None when unknown."""

    unit: str
    total: int | None


def input_size(pattern: str, file_format: FileFormat) -> InputSize:
    """The size of the input before reading it: Parquet rows, or bytes of plain JSONL."""
    paths = matching_files(pattern)
    if file_format == "parquet":
        rows = 0
        for path in paths:
            with FileSystems.open(path) as handle:
                rows += pq.ParquetFile(handle).metadata.num_rows
        return InputSize("records", rows)
    if any(is_compressed(p) for p in paths):
        return InputSize("bytes", None)
    sizes = FileSystems.match([pattern])[0].metadata_list
    return InputSize("bytes", sum(m.size_in_bytes for m in sizes))


@dataclass(frozen=True)
class Progress:
    """The board summed at one moment."""

    records: int
    bytes: int
    size: InputSize
    elapsed: float

    def render(self) -> str:
        """One line: done of total (percent), rate, time left."""
        done = self.records if self.size.unit == "records" else self.bytes
        amount = _amount(done, self.size.unit)
        rate = done / self.elapsed if self.elapsed > 0 else 0.0
        parts = [f"{self.records:,} records read"]
        if self.size.unit == "bytes":
            parts.append(amount)
        if self.size.total:
            share = min(done / self.size.total, 1.0)
            parts[-1] += f" of {_amount(self.size.total, self.size.unit)} ({share:.0%})"
        parts.append(f"{_amount(int(rate), self.size.unit)}/s")
        if self.size.total and rate > 0:
            left = max(self.size.total - done, 0) / rate
            parts.append(f"about {_duration(left)} left")
        return "evpack progress: " + ", ".join(parts)


def _amount(value: int, unit: str) -> str:
    if unit == "records":
        return f"{value:,} records"
    for limit, suffix in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if value >= limit:
            return f"{value / limit:.1f} {suffix}"
    return f"{value} B"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def read_board(board: Path, now: float) -> Progress | None:
    """Every worker's counts on the board summed at wall time `now`; None before any."""
    records = read = 0
    first = now
    size = None
    for path in board.glob("*.json"):
        counts = json.loads(path.read_text(encoding="utf-8"))  # whole: written by a rename
        records += counts["records"]
        read += counts["bytes"]
        first = min(first, counts["since"])
        size = InputSize(counts["unit"], counts["total"])
    return Progress(records, read, size, now - first) if size else None


class _Tally(beam.DoFn):
    """Counts records and payload bytes, passing them on; writes the counts to the board."""

    def __init__(self, board: str, size: InputSize) -> None:
        self._board = board
        self._size = size

    def setup(self) -> None:
        self._path = Path(self._board) / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
        self._records = 0
        self._bytes = 0
        self._since = 0.0
        self._flushed = 0.0

    def process(self, record: tuple[str, Any]) -> Any:
        if not self._records:
            self._since = time.time()
        self._records += 1
        payload = record[1]
        if isinstance(payload, bytes):
            self._bytes += len(payload) + 1  # and its line break
        now = time.monotonic()
        if now - self._flushed >= FLUSH_SECONDS:
            self._flush(now)
        yield record

    def finish_bundle(self) -> None:
        if self._records:
            self._flush(time.monotonic())

    def _flush(self, now: float) -> None:
        self._flushed = now
        if not self._path.parent.is_dir():  # the run is over, or the board is elsewhere
            return
        counts = {
            "records": self._records,
            "bytes": self._bytes,
            "since": self._since,
            "unit": self._size.unit,
            "total": self._size.total,
        }
        part = self._path.with_suffix(".part")
        part.write_text(json.dumps(counts), encoding="utf-8")
        os.replace(part, self._path)  # the monitor never reads half a file


class TrackProgress(beam.PTransform[beam.PCollection[Any], beam.PCollection[Any]]):
    """Records pass through; each worker's count of them lands on the progress `board`,
    beside the input's `size`."""

    def __init__(self, board: str, size: InputSize) -> None:
        super().__init__()
        self._board = board
        self._size = size

    def expand(self, records: beam.PCollection[Any]) -> beam.PCollection[Any]:
        return records | "Tally" >> beam.ParDo(_Tally(self._board, self._size))


class ProgressMonitor:
    """A context: makes the board, logs the run's progress from it, removes it on exit."""

    def __init__(self, seconds: float = PROGRESS_SECONDS) -> None:
        self.board = Path(tempfile.mkdtemp(prefix="evpack-progress-"))
        self._seconds = seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="evpack-progress", daemon=True)

    def __enter__(self) -> "ProgressMonitor":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        shutil.rmtree(self.board, ignore_errors=True)

    def progress(self) -> Progress | None:
        """The run's progress now (None before the first record was read)."""
        return read_board(self.board, time.time())

    def _watch(self) -> None:
        while not self._stop.wait(self._seconds):
            now = self.progress()
            if now is not None:
                _LOG.info("%s", now.render())
