"""Running a batch job as its own process under a fault, for the fault tests: start it
with a sink bound, wait for the phase to break, and read the one line it fails with.

Each run is a process of its own (`python -m pipelines.batch`), as a user runs it: the
bound must end the process, whatever threads the runner left waiting on the sink.
"""

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.batch_run import SAMPLES, flags

ROOT = Path(__file__).resolve().parent.parent
BOUND = 3
"""--sink_timeout_seconds in these runs."""
WITHIN = 90.0
"""How long a run broken by a fault may take in all (start-up included)."""


def port(host: str) -> int:
    return int(host.rstrip("/").rsplit(":", 1)[1])


def start(argv: list[str], env: dict[str, str], bound: int = BOUND) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pipelines.batch", *argv, f"--sink_timeout_seconds={bound}"],
        cwd=ROOT,
        env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def until(seen: Callable[[], bool], job: subprocess.Popen[str]) -> None:
    """Wait until `seen()` is true (the phase to break has begun) while the job runs."""
    deadline = time.monotonic() + WITHIN
    while not seen():
        assert job.poll() is None, job.communicate()
        assert time.monotonic() < deadline, "the phase to break never began"
        time.sleep(0.05)


def failed_within(job: subprocess.Popen[str], broken: float) -> str:
    """The one line the run failed with, once it exited 1 in bounded time after `broken`."""
    try:
        _, err = job.communicate(timeout=WITHIN)
    except subprocess.TimeoutExpired:
        job.kill()
        job.communicate()
        raise AssertionError(f"still running {WITHIN} s after the fault") from None
    assert job.returncode == 1, err[-3000:]
    assert time.monotonic() - broken < 10 * BOUND + 15
    assert "Traceback" not in err, err[-3000:]
    lines = [line for line in err.splitlines() if line.startswith("evpack batch:")]
    assert len(lines) == 1, err[-3000:]
    return lines[0]


def gs_argv(output: str) -> list[str]:
    given = {
        "--input": "gs://faults/in/requests.jsonl",
        "--catalog": "gs://faults/in/catalog.jsonl",
        "--output": output,
    }
    local = flags(SAMPLES / "requests.jsonl", Path("unused"))
    return [
        *(f"{k}={v}" for k, v in given.items()),
        *(a for a in local if a.split("=")[0] not in given),
    ]


def prompts_out(summary: str) -> int:
    return int(summary.split("prompts out")[1].split()[0])
