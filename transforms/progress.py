"""Progress of a local batch run against the size of its input: records or bytes read of
the total, the rate and the time left, one line for the whole run whatever the workers.

The total is known before the run starts: the sum of the input files' sizes (plain
JSONL), or of their row counts from the Parquet footers; compressed JSONL has no
known total, so its line gives what was read and the rate only. `TrackProgress`,
after the read, after the pack step and on the dead letters, counts each worker's
records (and bytes) read, requests packed and records refused, and writes them, at
most once a second, to its own small file on a local progress board (a temp
directory made for the run), with the total and the wall time of its first
element; `ProgressMonitor`, a thread of the process that started the run, sums the
board every `PROGRESS_SECONDS` and logs one line, each rate counted from its
stage's first element (not from the start, which loads the tokenizer and catalog).

The local runner runs one fused stage at a time, so the dead letters of the parse
step may be counted only once packing is over: until then the pack stage's percent
and time left are bounds (they reckon with every record read still to pack).

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
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apache_beam as beam
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from packer.parsing.names import FileFormat
from transforms.bounded_lines import is_compressed
from transforms.record_files import matching_files

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
    """The size of the input before reading it: Parquet rows, or bytes of plain JSONL
    (unknown, None, for compressed JSONL or a file that is not Parquet)."""
    paths = matching_files(pattern)
    if file_format == "parquet":
        rows = 0
        for path in paths:
            try:
                with FileSystems.open(path) as handle:
                    rows += pq.ParquetFile(handle).metadata.num_rows
            except Exception:  # not Parquet: the reader makes it a dead letter, not us a crash
                return InputSize("records", None)
        return InputSize("records", rows)
    if any(is_compressed(p) for p in paths):
        return InputSize("bytes", None)
    sizes = FileSystems.match([pattern])[0].metadata_list
    return InputSize("bytes", sum(m.size_in_bytes for m in sizes))


@dataclass(frozen=True)
class Stage:
    """One counted stage summed over the workers: elements, payload bytes, seconds since
    its first element."""

    count: int
    bytes: int
    seconds: float

    def rate(self, value: int) -> float:
        """`value` per second, over one second at least (a first instant says nothing)."""
        return value / max(self.seconds, 1.0)


@dataclass(frozen=True)
class Progress:
    """The board summed at one moment: records read of the input's `size`, requests packed,
    records refused (dead letters)."""

    read: Stage
    packed: Stage | None
    size: InputSize
    refused: int = 0

    def render(self) -> str:
        """One line: read of total (percent), then packed of read, each with rate and time
        left. The job packs only once every record is read (one request per request_id)."""
        size, read = self.size, self.read
        done = read.count if size.unit == "records" else read.bytes
        line = f"evpack progress: read {read.count:,} records"
        if size.unit == "bytes":
            line += f", {_amount(read.bytes, 'bytes')}"
        if size.total:
            line += f" of {_amount(size.total, size.unit)} ({min(done / size.total, 1.0):.0%})"
        if self.packed is None:
            rate = read.rate(done)
            line += f", {_amount(int(rate), size.unit)}/s"
            if size.total and rate > 0:
                line += f", about {_duration(max(size.total - done, 0) / rate)} left to read"
            return line
        packed = self.packed.count
        finished = packed + self.refused
        rate = self.packed.rate(packed)
        line += f"; packed {packed:,}"
        if self.refused:
            line += f" and refused {self.refused:,}"
        line += f" of them ({min(finished / max(read.count, 1), 1.0):.0%})"
        line += f", {rate:.1f} requests/s"
        if rate > 0:
            line += f", about {_duration(max(read.count - finished, 0) / rate)} left to pack"
        return line


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


READ, PACKED, REFUSED = "read", "packed", "refused"
"""The counted stages: records read (against the input's size), requests packed, records
refused as dead letters (a refused record is done too)."""


def read_board(board: Path, now: float) -> Progress | None:
    """Every worker's counts on the board summed at wall time `now`; None before any read."""
    count: dict[str, int] = defaultdict(int)
    read_bytes: dict[str, int] = defaultdict(int)
    first: dict[str, float] = {}
    size = None
    for path in board.glob("*.json"):
        counts = json.loads(path.read_text(encoding="utf-8"))  # whole: written by a rename
        stage = counts["stage"]
        count[stage] += counts["count"]
        read_bytes[stage] += counts["bytes"]
        first[stage] = min(first.get(stage, now), counts["since"])
        if counts["total"] is not None or size is None:
            size = InputSize(counts["unit"], counts["total"])

    def stage(name: str) -> Stage | None:
        if name not in first:
            return None
        return Stage(count[name], read_bytes[name], now - first[name])

    read = stage(READ)
    if read is None or size is None:
        return None
    return Progress(read, stage(PACKED), size, count[REFUSED])


class _Tally(beam.DoFn):
    """Counts elements (and the bytes of record payloads), passing them on; writes the
    counts to the board."""

    def __init__(self, board: str, stage: str, size: InputSize) -> None:
        self._board = board
        self._stage = stage
        self._size = size

    def setup(self) -> None:
        name = f"{self._stage}-{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
        self._path = Path(self._board) / name
        self._count = 0
        self._bytes = 0
        self._since = 0.0
        self._flushed = 0.0

    def process(self, element: Any) -> Any:
        if not self._count:
            self._since = time.time()
        self._count += 1
        if isinstance(element, tuple) and isinstance(element[1], bytes):
            self._bytes += len(element[1]) + 1  # a record's payload and its line break
        now = time.monotonic()
        if now - self._flushed >= FLUSH_SECONDS:
            self._flush(now)
        yield element

    def finish_bundle(self) -> None:
        if self._count:
            self._flush(time.monotonic())

    def _flush(self, now: float) -> None:
        self._flushed = now
        if not self._path.parent.is_dir():  # the run is over, or the board is elsewhere
            return
        counts = {
            "stage": self._stage,
            "count": self._count,
            "bytes": self._bytes,
            "since": self._since,
            "unit": self._size.unit,
            "total": self._size.total,
        }
        part = self._path.with_suffix(".part")
        part.write_text(json.dumps(counts), encoding="utf-8")
        os.replace(part, self._path)  # the monitor never reads half a file


class TrackProgress(beam.PTransform[beam.PCollection[Any], beam.PCollection[Any]]):
    """Elements pass through; each worker's count of them at `stage` lands on the progress
    `board`, beside the input's `size`."""

    def __init__(self, board: str, stage: str, size: InputSize) -> None:
        super().__init__()
        self._board = board
        self._stage = stage
        self._size = size

    def expand(self, items: beam.PCollection[Any]) -> beam.PCollection[Any]:
        return items | "Tally" >> beam.ParDo(_Tally(self._board, self._stage, self._size))


class ProgressMonitor:
    """A context: makes the board, logs the run's progress from it every `PROGRESS_SECONDS`,
    keeps the last count as `final` (logged at DEBUG) and removes the board on exit."""

    def __init__(self) -> None:
        self.board = Path(tempfile.mkdtemp(prefix="evpack-progress-"))
        self.final: Progress | None = None
        self._seconds = PROGRESS_SECONDS
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="evpack-progress", daemon=True)

    def __enter__(self) -> "ProgressMonitor":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.final = self.progress()
        if self.final is not None:
            _LOG.debug("%s (final)", self.final.render())
        shutil.rmtree(self.board, ignore_errors=True)

    def progress(self) -> Progress | None:
        """The run's progress now (None before the first record was read)."""
        return read_board(self.board, time.time())

    def _watch(self) -> None:
        while not self._stop.wait(self._seconds):
            now = self.progress()
            if now is not None:
                _LOG.info("%s", now.render())
