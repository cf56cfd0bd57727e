"""Compressed bombs: peak RSS of the whole batch job on a small `.jsonl.gz` holding one huge line.

    python -m benchmarks.bomb [--line-mb 160,400] [--work-dir out/bomb]

Each input is the sample requests plus one line of `--line-mb` MB (a JSON
string of one repeated letter), gzip-compressed to a few hundred kB. The job
(`python -m pipelines.batch`, default `--max_record_bytes` of 4 MiB) runs in
its own process; its peak RSS is what the kernel reports for the child
(`os.wait4`), beside the same job on the sample requests alone. Before lines
were cut off while read, a 160 kB file of one 160 MB line peaked at 1.6 GB and
a 400 kB one at 3.6 GB.
"""

import argparse
import gzip
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.scale import _timed_child

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
CHUNK = b"a" * (1 << 20)


def write_bomb(path: Path, line_mb: int) -> Path:
    """The sample requests, then one line of `line_mb` MB, gzip-compressed, streamed to disk."""
    with gzip.open(path, "wb", compresslevel=9) as handle:
        handle.write((SAMPLES / "requests.jsonl").read_bytes())
        handle.write(b'{"request_id": "bomb", "question": "')
        for _ in range(line_mb):
            handle.write(CHUNK)
        handle.write(b'"}\n')
    return path


def run_job(requests: Path, out: Path) -> dict[str, float | int]:
    """Wall seconds, peak RSS and exit status of one batch job on `requests`."""
    shutil.rmtree(out, ignore_errors=True)
    argv = [
        sys.executable,
        "-m",
        "pipelines.batch",
        f"--input={requests}",
        f"--catalog={SAMPLES / 'catalog.jsonl'}",
        f"--config={SAMPLES / 'config.yaml'}",
        f"--output={out}",
        "--event_time=2026-11-15T12:00:00Z",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    wall, cpu, peak, status = _timed_child(argv, env)
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "peak_rss": peak, "exit": status}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--line-mb", default="160,400")
    parser.add_argument("--work-dir", type=Path, default=Path("out/bomb"))
    args = parser.parse_args(argv)
    work: Path = args.work_dir
    work.mkdir(parents=True, exist_ok=True)
    rows = [("samples alone", SAMPLES / "requests.jsonl")]
    for mb in (int(s) for s in args.line_mb.split(",")):
        rows.append((f"one {mb} MB line", write_bomb(work / f"bomb-{mb}.jsonl.gz", mb)))
    print("| input | file size | wall s | CPU s | peak RSS | exit |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, path in rows:
        got = run_job(path, work / "out")
        print(
            f"| {name} | {path.stat().st_size / 1e3:.0f} kB | {got['wall_s']} | {got['cpu_s']} "
            f"| {int(got['peak_rss']) / 1e6:.0f} MB | {got['exit']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
