"""Every call a batch run makes to a sink from its launcher ends within a bound.

A sink down past its client's retry window used to hang a run: Cloud Storage's
client retries each call for 120 s and Beam's filesystem calls it again on the
way out; BigQuery's client retries an insert for 600 s; nothing bounded the
sum. `Bound` runs one sink call (or one step made of a few: a lock, a move, a
record) on a worker thread and waits `seconds` for it (`--sink_timeout_seconds`);
past that it raises `SinkTimeout`, one line naming the sink, the phase of the
run (`lock`, `staging`, `commit`, `delivery`) and where the run's files are, and
the command exits 1. The abandoned call's thread is a daemon: the process ends
without it.

Why a thread and not each client's own deadline: Beam builds its Cloud Storage
client itself, with a module-wide retry setting and no timeout option, and a
rename on Cloud Storage is two calls (copy, delete); one bound around the step
holds whatever the client does inside. A commit cut off this way is as one
killed half way: its staging folder says so and the next run names it
(`transforms.run_folder.cut_off`).

Filesystem errors (`OSError`, Beam's `BeamIOError` around one) become
`SinkRefused`, one line naming the path and what to fix (`refusal`).
"""

import errno
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from apache_beam.io.filesystem import BeamIOError

T = TypeVar("T")

_FIXES = {
    errno.ENOSPC: "the disk is full: free space there",
    errno.EDQUOT: "the disk quota is used up: free space there",
    errno.EROFS: "it is on a read-only filesystem: make it writable",
    errno.EACCES: "it may not be written: give this user write access",
    errno.EPERM: "it may not be written: give this user write access",
    errno.ENOENT: "it is gone (deleted or unmounted while the run ran): bring it back",
}

_FILESYSTEM_ERRORS = frozenset({*_FIXES, errno.EIO, errno.EISDIR, errno.ENOTDIR, errno.EFBIG})


class Step(Protocol):
    """Runs one sink call, `what` naming it (`Bound`, or `unbounded`)."""

    def __call__(self, call: Callable[[], T], what: str) -> T: ...


def unbounded(call: Callable[[], T], what: str) -> T:
    """The call as it is: for a step no one waits on (a Dataflow job's own commit)."""
    return call()


class SinkTimeout(RuntimeError):
    """A sink call outlasted its bound; the message is the one line to show."""


class SinkRefused(RuntimeError):
    """The filesystem refused a call (full, read-only, gone): the message names the path,
    the fix and the phase; `left`, what the run left behind there."""

    def __init__(self, message: str, left: str) -> None:
        super().__init__(message)
        self.left = left


def _chain(err: BaseException) -> Iterator[BaseException]:
    """`err`, then what caused it, and so on."""
    seen: BaseException | None = err
    while seen is not None:
        yield seen
        seen = seen.__cause__ or seen.__context__


_FINALIZE_FAILED = "Encountered exceptions in finalize_write: "
_WRITTEN_OSERROR = re.compile(r"OSError\((\d+), '([^'\\]*)'\)")
"""Beam's file sinks fail their finalize with a bare `Exception` whose message is the list
of the renames' errors written out (`filebasedsink.FileBasedSink.finalize_write`): the
errors themselves are gone, so their errno and text are read back from that message."""


def _finalize_oserror(err: BaseException) -> OSError | None:
    """The first filesystem error a failed file-sink finalize lists in its message."""
    text = str(err)
    if type(err) is not Exception or not text.startswith(_FINALIZE_FAILED):
        return None
    for m in _WRITTEN_OSERROR.finditer(text):
        if int(m[1]) in _FILESYSTEM_ERRORS:
            return OSError(int(m[1]), m[2])
    return None


def _oserror(err: BaseException) -> OSError | None:
    """The OSError behind `err`: itself, one Beam wrapped (in a `BeamIOError`, or written
    into a file sink's finalize failure), or its cause."""
    for seen in _chain(err):
        if isinstance(seen, OSError) and seen.errno in _FILESYSTEM_ERRORS:
            return seen  # not a network error (ConnectionError is an OSError too)
        if (written := _finalize_oserror(seen)) is not None:
            return written
        if isinstance(seen, BeamIOError):
            inner = [
                e for e in (seen.exception_details or {}).values() if isinstance(e, BaseException)
            ]
            found = next((o for o in map(_oserror, inner) if o is not None), None)
            if found is not None:
                return found
    return None


def is_filesystem_error(err: BaseException) -> bool:
    """Whether a filesystem's error is behind `err`: a refusal (full, read-only, gone), or
    a `BeamIOError`, which Beam's filesystems also raise without an errno when a step finds
    its files gone (`src and dst files do not exist` in a write's finalize once its folder
    vanished)."""
    return any(isinstance(seen, BeamIOError) for seen in _chain(err)) or _oserror(err) is not None


def refusal(err: BaseException, where: str) -> str | None:
    """One line for a filesystem error behind `err` at `where` (a folder), or None when
    `err` is no filesystem error."""
    found = _oserror(err)
    if found is None:
        return None
    fix = _FIXES.get(found.errno or 0, "check that it can be written")
    path = found.filename or where
    return f"{path} refused the write ({found.strerror}): {fix}"


@dataclass(frozen=True)
class Bound:
    """How long each sink call of one phase may take, and what to name when it does not."""

    seconds: float
    sink: str
    """The sink as the user named it: `--output gs://b/run`, `--bigquery_dataset p.d`."""
    phase: str
    staging: str
    """Where the run's files are (its staging folder), named in the message."""

    def __call__(self, call: Callable[[], T], what: str) -> T:
        """`call()`'s result, or `SinkTimeout` once `seconds` have passed; a filesystem
        error is `SinkRefused`."""
        worker = _Worker(call, f"sink-{self.phase}")
        worker.join(self.seconds)
        if worker.is_alive():
            raise SinkTimeout(
                f"{self.sink} did not answer within --sink_timeout_seconds={self.seconds:g} "
                f"({what}, in the {self.phase} phase); {self.left()}"
            )
        if worker.failed:
            line = refusal(worker.failed[0], self.sink)
            if line is not None:
                raise SinkRefused(f"{line} ({what}, in the {self.phase} phase)", self.left())
        return worker.result()

    def left(self) -> str:
        """What the run left, for the message."""
        return _LEFT[self.phase].format(staging=self.staging)


_LEFT = {
    "lock": "nothing was written; run again once it answers",
    "staging": "nothing of this run was committed; its files are under {staging}/",
    "commit": (
        "the commit stopped: nothing of this run is committed unless the next run into "
        "--output names its commit as cut off; its files are under {staging}/"
    ),
    "table commit": (
        "the files are committed under --output, the tables as they were unless BigQuery "
        "applied the transaction after all: rerun with --overwrite to make them agree"
    ),
    "delivery": (
        "the run is committed and what was delivered is recorded under deliveries/: "
        "rerun with --overwrite to send only the rest"
    ),
}
"""What a run stopped in each phase leaves, named in its one line."""

PROBE_SECONDS = 2.0
"""How often `watch` asks the sinks whether they answer while the pipeline runs."""


def watch(work: Callable[[], T], probes: Sequence[tuple[Bound, Callable[[], str | None]]]) -> T:
    """`work()`'s result, run on a worker thread while each probe (a sink's cheap call,
    returning its problem or None) is asked every `PROBE_SECONDS` within its `Bound`.

    The pipeline phase cannot be bounded call by call (Beam makes the calls), nor as a
    whole (a big run takes hours): what is bounded is how long a sink it writes may
    stay silent. A probe that does not answer in time, or answers with a problem, raises
    `SinkTimeout` naming that sink; the pipeline's threads are left to the process's
    exit. Rejected: a stall timer on the progress board (a long shuffle counts nothing
    for minutes while every sink is fine)."""
    worker = _Worker(work, "pipeline")
    while worker.is_alive():
        worker.join(PROBE_SECONDS)
        if worker.is_alive():
            for bound, probe in probes:
                problem = bound(probe, "checking that it still answers")
                if problem is not None:
                    raise SinkTimeout(f"{problem} (in the {bound.phase} phase); {bound.left()}")
    return worker.result()


class _Worker(threading.Thread, Generic[T]):
    """`call()` on a daemon thread, its result or its error kept for the waiting thread
    (a daemon, so an abandoned call never holds the process's exit)."""

    def __init__(self, call: Callable[[], T], name: str) -> None:
        super().__init__(name=name, daemon=True)
        self._call = call
        self.returned: list[T] = []
        self.failed: list[BaseException] = []
        self.start()

    def run(self) -> None:
        try:
            self.returned.append(self._call())
        except BaseException as err:  # handed to the waiting thread
            self.failed.append(err)

    def result(self) -> T:
        """What the finished call returned; what it raised is raised here."""
        if self.failed:
            raise self.failed[0]
        return self.returned[0]
