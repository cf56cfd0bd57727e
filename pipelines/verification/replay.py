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
prompt format and model too) must be the one in the manifests, or the job
refuses to start. The prompt format and model are the run's, as its run
record says (`runs/`), unless `--prompt_format` or `--model` contradicts
them; a refusal names which of them differ. Exit status 1 when any request
or file differs, so an audit can gate on it.
"""

import logging
import sys
from collections import Counter

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.parquetio import ReadFromParquet
from apache_beam.options.pipeline_options import PipelineOptions

from packer.parsing.strict_json import Unreadable, printable
from pipelines.command import CommandFailed, UsageError, run_command
from pipelines.options.config_file import load_config
from pipelines.options.help import CommandHelp
from pipelines.options.jobs import REPLAY_SECTIONS, Settings, resolve
from pipelines.options.packing import PackingOptions
from pipelines.options.runner import BATCH_RUNNER, pin_local_runner
from pipelines.options.sinks import SinkOptions, check_literal
from pipelines.options.stored_run import StoredRunOptions
from schemas import ExclusionRecord, ManifestRow
from schemas.replay import ReplayRow
from schemas.run import RunRecord
from schemas.tables import BATCH_FILE_TYPES
from transforms.catalog.factory import catalog_provider
from transforms.io.row_files import WriteParquet, output_prefix
from transforms.pack import PackRequests
from transforms.parse import ParseRequests
from transforms.record_files import ReadRecords, matching_files, read_parquet
from transforms.run_folder import (
    RECORD,
    not_whole,
    prompt_line_globs,
    record_mismatches,
    recorded_files,
    staged_prompt_glob,
)
from transforms.sinks import unqueued
from transforms.verification.replay import ReplayRun


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


def _check_whole(run_dir: str) -> None:
    """Refuse a folder that is not one whole committed run: without its run record
    nothing says which outputs it should hold (a copy missing a whole output would
    replay as `same`), and a file the record lists is gone (exit 1, as an audit
    finding). A file changed in size or added is named after the replay."""
    check_literal(run_dir, "run")
    problem = not_whole(run_dir, BATCH_FILE_TYPES)
    if problem is None and recorded_files(run_dir) is None:
        raise UsageError(
            f"--run {run_dir} has no run record ({RECORD}), which a batch run's commit "
            "writes last: it is not a committed run folder (or was copied without it); "
            "replay the run's own --output"
        )
    if problem is not None:
        raise CommandFailed(f"--run {run_dir} is not the run it was: {problem}")


def run_record(run_dir: str) -> RunRecord | None:
    """The run's record (`runs/`: the last line, one per batch run); None for a run from
    before records."""
    lines = []
    for path in matching_files(f"{run_dir}/runs/*.jsonl"):
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
            lines += [line for line in handle.read().decode("utf-8").split("\n") if line.strip()]
    return RunRecord.model_validate_json(lines[-1]) if lines else None


def as_recorded(options: PipelineOptions, record: RunRecord | None, stored: set[str]) -> None:
    """Take the prompt format and the model the flags leave out from the run's record: the
    format as recorded; the model only when the config alone does not reach the run's
    config_hash and names another (setting it would change the hash of a config that
    names the run's model another way, e.g. as `model`)."""
    packing = options.view_as(PackingOptions)
    if record is None:
        return
    if packing.prompt_format is None:
        packing.prompt_format = record.prompt_format
    if packing.model is None:
        config = load_config(packing.config, packing.prompt_format)
        if config.config_hash() not in stored and config.format_model != record.model:
            packing.model = record.model


def contradictions(settings: Settings, record: RunRecord | None) -> str:
    """Which of the run's recorded format and model the replay's config differs in."""
    if record is None:
        return "the run has no run record to say which"
    config = settings.config
    named = [
        f"{what} {given} (the run's: {recorded})"
        for what, given, recorded in (
            ("prompt format", config.prompt_format, record.prompt_format),
            ("model", config.format_model, record.model),
        )
        if given != recorded
    ]
    return "it differs in " + "; ".join(named) if named else "its format and model are the run's"


def _settings(options: PipelineOptions) -> tuple[Settings, str]:
    """The settings of the replay and the run folder; refused unless the config is the
    run's, and (without --overwrite) when replay rows are already there."""
    run = options.view_as(StoredRunOptions).run
    if not run:
        raise ValueError("--run is required: the output directory of the batch run to replay")
    run_dir = run.rstrip("/")
    _check_whole(run_dir)
    sinks = options.view_as(SinkOptions)
    sinks.output = sinks.output or run_dir
    stored, record = stored_config_hashes(run_dir), run_record(run_dir)
    as_recorded(options, record, stored)
    settings = resolve(options)
    given = settings.config.config_hash()
    if stored != {given}:
        raise ValueError(
            f"the run was packed with config_hash {', '.join(sorted(stored))}; the given config "
            f"(with --prompt_format and --model) hashes to {given}: "
            f"{contradictions(settings, record)}; pass the run's config"
        )
    earlier = matching_files(f"{output_prefix(settings.output, 'replay')}-*.parquet")
    if earlier and not sinks.overwrite:
        raise ValueError(f"{settings.output} already holds replay rows; pass --overwrite")
    if earlier:
        FileSystems.delete(earlier)
    return settings, run_dir


def _stored(run_dir: str) -> tuple[list[str], str | None]:
    """The patterns of the run's prompt lines (`prompts/`, and `held_prompts/` of a run that
    held its prompts without evidence), and of its exclusions, None when it holds none."""
    lines = prompt_line_globs(run_dir)
    exclusions = f"{run_dir}/exclusions/*.parquet"
    return lines, exclusions if matching_files(exclusions) else None


def build(p: beam.Pipeline, settings: Settings, run_dir: str) -> None:
    """Compose the replay: re-pack every request, compare with what the run folder holds."""
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
    stored_lines, stored_exclusions = _stored(run_dir)
    lines = exclusions = None
    staged = staged_prompt_glob(run_dir)  # a run with --prompts_topic: lines staged for it
    if stored_lines or staged:
        read = [
            p | f"ReadPromptLines{k or ''}" >> ReadRecords(pattern, "jsonl")
            for k, pattern in enumerate(stored_lines)
        ]
        if staged is not None:
            read.append(
                p
                | "ReadStagedLines" >> ReadRecords(staged, "jsonl")
                | "Unqueued" >> beam.MapTuple(lambda source, raw: (source, unqueued(raw)))
            )
        lines = (
            tuple(read)
            | "AllPromptLines" >> beam.Flatten()
            | "LineText" >> beam.MapTuple(_line_text)
        )
    if stored_exclusions:
        exclusions = (
            p
            | "ReadExclusions" >> ReadFromParquet(stored_exclusions)
            | "Exclusion" >> beam.Map(ExclusionRecord.model_validate)
        )
    provider = catalog_provider(p, settings.catalog, streaming=False)
    pack = PackRequests(settings.config, provider, settings.event_time)
    rows = requests.requests | "Replay" >> ReplayRun(manifests, pack, lines, exclusions)
    _ = rows | "Write" >> WriteParquet(settings.output, "replay", ReplayRow)


def summary(output: str, run_dir: str) -> tuple[str, bool]:
    """The replay's rows by status, the requests that differ and the folder's changes;
    and whether every packet was reproduced."""
    prefix = output_prefix(output, "replay")
    replayed = [
        r for f in matching_files(f"{prefix}-*.parquet") for r in read_parquet(f).to_pylist()
    ]
    status = Counter(r["status"] for r in replayed)
    differing = sorted(printable(r["request_id"]) for r in replayed if r["status"] != "same")
    lines = [
        f"evpack replay: {len(replayed)} requests of {run_dir}",
        "  status  " + ", ".join(f"{k} {v}" for k, v in sorted(status.items())),
    ]
    if differing:
        lines.append(
            "  differ  " + ", ".join(differing[:20]) + (" ..." if len(differing) > 20 else "")
        )
    found = zip(("prompt lines", "exclusions"), _stored(run_dir), strict=True)
    checked = ["manifests"] + [name for name, pattern in found if pattern]
    if staged_prompt_glob(run_dir) is not None:
        checked.append("prompt lines staged for the topic")
    lines.append("  checked " + ", ".join(checked) + " (what the run folder holds)")
    altered = record_mismatches(run_dir, BATCH_FILE_TYPES)
    lines += [f"  folder  {problem} (against {run_dir}/{RECORD})" for problem in altered]
    lines.append(f"  rows    {prefix}-*.parquet")
    return "\n".join(lines), not differing and not altered


def run(argv: list[str] | None = None) -> tuple[str, bool]:
    """Run the replay; returns the summary and whether every packet was reproduced."""
    options = PipelineOptions(argv)
    settings, run_dir = _settings(options)
    pin_local_runner(options, BATCH_RUNNER)
    with beam.Pipeline(options=options) as p:
        build(p, settings, run_dir)
    return summary(settings.output, run_dir)


def _run_and_print(argv: list[str]) -> int:
    summary_text, reproduced = run(argv)
    print(summary_text)
    return 0 if reproduced else 1


def main(argv: list[str] | None = None) -> int:
    return run_command(
        "evpack replay", HELP, REPLAY_SECTIONS, _run_and_print, argv, log_level=logging.WARNING
    )


HELP = CommandHelp(
    __doc__,
    required={
        "run": "required",
        "input": "required",
        "catalog": "required unless --bigtable_table",
    },
    flags={
        "input": "The request files the run read: a file or glob, local or gs:// (JSONL or "
        "Parquet).",
        "catalog": "The catalog to re-pack against: the run's, or a newer one to see "
        "which packets it changes.",
        "config": "The run's packing config: its config_hash must be the manifests'.",
        "prompt_format": "The prompt format to re-pack in (part of config_hash). Default: "
        "the run's, as its run record says.",
        "model": "The model to re-pack for (part of config_hash). Default: the run's, as "
        "its run record says.",
        "output": "Folder of the rows: <output>/replay/ (default: --run).",
        "overwrite": "Replace the rows of an earlier replay (default: refuse).",
    },
    titles={
        "InputOptions": "The run's requests",
        "SinkOptions": "Where the rows go",
        "PackingOptions": "How the run packed its prompts",
    },
)
"""What `evpack replay --help` says beyond the flags' own text."""


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
