"""`evpack replay`: are the stored packets of a run reproducible from their inputs?

    evpack replay --run out/run1 --input 'in/*.jsonl' --catalog catalog.jsonl \\
        --config config.yaml [--prompt_format ...] [--output DIR] [--overwrite]

Re-packs every request of the run's manifests from its input record, the
catalog and the config, at the event time the manifest recorded, compares
the manifest, the stored prompt line and the stored exclusions (those the run
folder holds) with the re-pack, checks the folder against the run record
the commit left (a file missing, changed or added is named), and writes one
row per request to `<output>/replay/` (Parquet; `--output` defaults to
`--run`). The config must be the run's: its `config_hash` (which names the
prompt format too) must be the one in the manifests, or the job refuses to
start. Exit status 1 when any request or file differs, so an audit can gate
on it.
"""

import logging
import sys
from collections import Counter

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.parquetio import ReadFromParquet
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.batch import FILE_TYPES, LOCAL_RUNNER, pack_transform
from pipelines.command import run_command
from pipelines.options import EvpackOptions, pin_local_runner, resolve
from schemas import ExclusionRecord, ManifestRow
from schemas.replay import ReplayRow
from transforms.io.row_files import WriteParquet, output_prefix
from transforms.parse import ParseRequests
from transforms.record_files import ReadRecords, matching_files, read_parquet
from transforms.replay import ReplayRun
from transforms.staging import RECORD, record_mismatches
from transforms.strict_json import Unreadable


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


def _line_text(source: str, payload: bytes | Unreadable) -> str:
    """A stored prompt line as text; an unreadable one as its reason (a line of no format)."""
    if isinstance(payload, Unreadable):
        return payload.reason
    return payload.decode("utf-8", errors="replace")


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
    stored_lines, stored_exclusions = (
        pattern if matching_files(pattern) else None
        for pattern in (f"{run_dir}/prompts/*.jsonl", f"{run_dir}/exclusions/*.parquet")
    )
    pin_local_runner(options, LOCAL_RUNNER)
    assert settings.input is not None and settings.input_format is not None
    with beam.Pipeline(options=options) as p:
        requests = (
            p
            | "ReadRequests"
            >> ReadRecords(settings.input, settings.input_format, settings.max_record_bytes)
            | "Parse" >> ParseRequests(settings.input_shape, settings.max_record_bytes)
        )
        manifests = (
            p
            | "ReadManifests" >> ReadFromParquet(f"{run_dir}/manifests/*.parquet")
            | "Manifest" >> beam.Map(ManifestRow.model_validate)
        )
        lines = exclusions = None
        if stored_lines:
            lines = (
                p
                | "ReadPromptLines" >> ReadRecords(stored_lines, "jsonl")
                | "LineText" >> beam.MapTuple(_line_text)
            )
        if stored_exclusions:
            exclusions = (
                p
                | "ReadExclusions" >> ReadFromParquet(stored_exclusions)
                | "Exclusion" >> beam.Map(ExclusionRecord.model_validate)
            )
        replay = ReplayRun(manifests, pack_transform(p, settings), lines, exclusions)
        rows = requests.requests | "Replay" >> replay
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
    checked = ["manifests"] + [
        name
        for name, found in (("prompt lines", stored_lines), ("exclusions", stored_exclusions))
        if found
    ]
    lines.append("  checked " + ", ".join(checked) + " (what the run folder holds)")
    altered = record_mismatches(run_dir, FILE_TYPES)
    lines += [f"  folder  {problem} (against {run_dir}/{RECORD})" for problem in altered]
    lines.append(f"  rows    {prefix}-*.parquet")
    return "\n".join(lines), not differing and not altered


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
