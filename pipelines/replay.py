"""`evpack replay`: are the stored packets of a run reproducible from their inputs?

    evpack replay --run out/run1 --input 'in/*.jsonl' --catalog catalog.jsonl \\
        --config config.yaml [--prompt_format ...] [--output DIR] [--overwrite]

Re-packs every request of the run's manifests from its input record, the
catalog and the config, at the event time the manifest recorded, and writes
one row per request to `<output>/replay/` (Parquet; `--output` defaults to
`--run`). The config must be the run's: its `config_hash` (which names the
prompt format too) must be the one in the manifests, or the job refuses to
start. Exit status 1 when any request differs, so an audit can gate on it.
"""

import logging
import sys
from collections import Counter

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.parquetio import ReadFromParquet
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.batch import LOCAL_RUNNER, pack_transform
from pipelines.command import run_command
from pipelines.options import EvpackOptions, pin_local_runner, resolve
from schemas import ManifestRow
from schemas.replay import ReplayRow
from transforms.files import WriteParquet, output_prefix
from transforms.parse import ParseRequests
from transforms.record_files import ReadRecords, matching_files, read_parquet
from transforms.replay import ReplayRun


def stored_config_hashes(run: str) -> set[str]:
    """The config hashes the run's manifests name (one column read)."""
    files = matching_files(f"{run}/manifests/*.parquet")
    if not files:
        raise ValueError(f"--run {run!r} holds no manifests/*.parquet")
    return {
        h
        for f in files
        for h in read_parquet(f, columns=["config_hash"])["config_hash"].to_pylist()
    }


def run(argv: list[str] | None = None) -> tuple[str, bool]:
    """Run the replay; returns the summary and whether every packet was reproduced."""
    options = PipelineOptions(argv)
    shared = options.view_as(EvpackOptions)
    if not shared.run:
        raise ValueError("--run is required: the output directory of the batch run to replay")
    run_dir = shared.run.rstrip("/")
    shared.output = shared.output or run_dir
    settings = resolve(options)
    given = settings.config.config_hash()
    stored = stored_config_hashes(run_dir)
    if stored != {given}:
        raise ValueError(
            f"the run was packed with config_hash {', '.join(sorted(stored))}; the given config "
            f"(with --prompt_format) hashes to {given}: pass the run's config"
        )
    prefix = output_prefix(settings.output, "replay")
    earlier = matching_files(f"{prefix}-*.parquet")
    if earlier and not shared.overwrite:
        raise ValueError(f"{settings.output} already holds replay rows; pass --overwrite")
    if earlier:
        FileSystems.delete(earlier)
    pin_local_runner(options, LOCAL_RUNNER)
    assert settings.input is not None and settings.input_format is not None
    with beam.Pipeline(options=options) as p:
        requests = (
            p
            | "ReadRequests" >> ReadRecords(settings.input, settings.input_format)
            | "Parse" >> ParseRequests(settings.input_shape, settings.max_record_bytes)
        )
        manifests = (
            p
            | "ReadManifests" >> ReadFromParquet(f"{run_dir}/manifests/*.parquet")
            | "Manifest" >> beam.Map(ManifestRow.model_validate)
        )
        rows = requests.requests | "Replay" >> ReplayRun(manifests, pack_transform(p, settings))
        _ = rows | "Write" >> WriteParquet(settings.output, "replay", ReplayRow)
    replayed = [
        r for f in matching_files(f"{prefix}-*.parquet") for r in read_parquet(f).to_pylist()
    ]
    status = Counter(r["status"] for r in replayed)
    differing = sorted(r["request_id"] for r in replayed if r["status"] != "same")
    lines = [
        f"evpack replay: {len(replayed)} requests of {run_dir}",
        "  status  " + ", ".join(f"{k} {v}" for k, v in sorted(status.items())),
    ]
    if differing:
        lines.append(
            "  differ  " + ", ".join(differing[:20]) + (" ..." if len(differing) > 20 else "")
        )
    lines.append(f"  rows    {prefix}-*.parquet")
    return "\n".join(lines), not differing


def _run_and_print(argv: list[str]) -> int:
    summary, reproduced = run(argv)
    print(summary)
    return 0 if reproduced else 1


def main(argv: list[str] | None = None) -> int:
    return run_command(
        "evpack replay",
        __doc__,
        ((EvpackOptions, None),),
        _run_and_print,
        argv,
        log_level=logging.WARNING,
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
