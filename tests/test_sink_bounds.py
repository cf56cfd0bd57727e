"""`transforms.io.bounded`: a sink call ends within its bound, its error or its result
handed back to the waiting thread (the fault tests run whole jobs; these the pieces)."""

import errno
import threading
import time

import pytest

from transforms.io import bounded
from transforms.io.bounded import (
    Bound,
    SinkRefused,
    SinkTimeout,
    is_filesystem_error,
    refusal,
    watch,
)

BOUND = Bound(0.2, "--output gs://b/run", "commit", "gs://b/run/.staging-1")


def test_a_call_that_answers_gives_its_result() -> None:
    assert BOUND(lambda: 42, "moving a file") == 42


def test_a_call_that_hangs_is_one_line_naming_sink_phase_and_staging_within_the_bound() -> None:
    release = threading.Event()
    started = time.monotonic()
    with pytest.raises(SinkTimeout) as raised:
        BOUND(release.wait, "moving a file")
    release.set()
    assert time.monotonic() - started < 5
    line = str(raised.value)
    assert "\n" not in line and "--output gs://b/run" in line and "commit phase" in line
    assert "gs://b/run/.staging-1/" in line


def test_a_filesystem_error_is_a_refusal_and_any_other_error_is_raised_as_it_is() -> None:
    def read_only() -> None:
        raise OSError(errno.EROFS, "Read-only file system", "/out/run")

    with pytest.raises(SinkRefused, match=r"/out/run refused the write .*make it writable"):
        BOUND(read_only, "moving a file")
    with pytest.raises(KeyError):
        BOUND(lambda: {}["x"], "moving a file")


def test_a_file_sink_finalize_failing_on_the_filesystem_is_read_back_as_its_refusal() -> None:
    """Beam's file sinks list their renames' errors as text in a bare `Exception`."""
    written = (
        "Encountered exceptions in finalize_write: [OSError(OSError(30, 'Read-only file system'))]"
    )
    assert is_filesystem_error(Exception(written))
    line = refusal(Exception(f"{written} [while running 'WriteRunRecord']"), "/out/run")
    assert line == (
        "/out/run refused the write (Read-only file system): "
        "it is on a read-only filesystem: make it writable"
    )
    for other in (
        Exception("Encountered exceptions in finalize_write: [OSError(111, 'Connection refused')]"),
        RuntimeError(written),
        Exception("OSError(30, 'Read-only file system')"),
    ):
        assert refusal(other, "/out/run") is None and not is_filesystem_error(other)


def test_watch_ends_a_run_whose_sink_stops_answering(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounded, "PROBE_SECONDS", 0.05)
    done = threading.Event()
    assert watch(lambda: "ran", [(BOUND, lambda: None)]) == "ran"
    with pytest.raises(SinkTimeout, match=r"bucket gone \(in the commit phase"):
        watch(done.wait, [(BOUND, lambda: "bucket gone")])
    done.set()
