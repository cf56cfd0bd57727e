"""Start-up: how long `evpack` takes to answer what needs no run.

    python -m benchmarks.startup [--repeat 5] [--root DIR]

Each command line runs `python -m pipelines.cli` in a fresh process, `--repeat`
times; the median wall time is printed. `--root` runs another checkout's code
(e.g. an older commit, `git worktree add /tmp/old COMMIT`) with this interpreter,
to compare. The target is 0.5 s for `--help` and a refused flag or command, which
are answered from the flag table before Beam loads (`pipelines.startup`); a path
or config refused is checked by the command itself, after its imports, and shown
for comparison.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINES = (
    ("--version", ["--version"]),
    ("misspelt command", ["bach"]),
    ("batch --help", ["batch", "--help"]),
    ("verify --help", ["verify", "--help"]),
    ("report --help", ["report", "--help"]),
    ("batch misspelt flag", ["batch", "--inptu", "x.jsonl"]),
    ("catalog load misspelt flag", ["catalog", "load", "--catalgo", "x"]),
    ("batch missing input file", ["batch", "--input", "nothing.jsonl", "--output", "/tmp/x"]),
)
"""What is timed: a label and the arguments of `evpack`."""
TARGET_SECONDS = 0.5


def timed(root: Path, args: list[str], repeat: int) -> float:
    """The median wall time of `python -m pipelines.cli ARGS` run from `root`."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "pipelines.cli", *args],
            cwd=root,
            env=env,
            capture_output=True,
            check=False,
        )
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to time")
    args = parser.parse_args(argv)
    print(f"start-up of evpack from {args.root} (median of {args.repeat}, wall seconds)")
    for label, line in LINES:
        seconds = timed(args.root, line, args.repeat)
        mark = "" if "missing" in label else ("  met" if seconds <= TARGET_SECONDS else "  MISSED")
        print(f"  {label:<28} {seconds:6.2f}{mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
