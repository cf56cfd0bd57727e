"""The batch pipeline: request files in; prompts, audit tables and dead letters out.

    evpack batch --input 'in/*.jsonl' --catalog catalog.jsonl --config config.yaml \\
        --output out/run1 [--direct_num_workers 2 --direct_running_mode multi_processing]

Runner: unless `--runner` names another one (e.g. DataflowRunner), the job runs
on Beam's in-process FnApiRunner, the engine the DirectRunner itself uses for
batch. The plain DirectRunner first tries the Prism runner, whose binary is
downloaded at run time; offline that fails. `--direct_num_workers` and
`--direct_running_mode` are honoured by the FnApiRunner.
"""

import logging
import sys
import time
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.runner import PipelineResult

from packer.version import BUILDER_VERSION
from pipelines.command import CommandFailed, run_command
from pipelines.options.flags import check_numbers
from pipelines.options.help import CommandHelp
from pipelines.options.input import GateOptions
from pipelines.options.jobs import BATCH_SECTIONS, Settings, resolve, settings_summary
from pipelines.options.runner import BATCH_RUNNER, pin_local_runner
from pipelines.options.sinks import SinkOptions, require_reachable
from pipelines.own_commit import FinalCommit, commit_last
from pipelines.run_commit import (
    Phases,
    RunFailed,
    clean_up,
    commit_files,
    commit_rows,
    count_in_record,
    decide_failure,
    deliver,
    prepare_tables,
    ready_tables,
    table_run,
)
from pipelines.summary import RunSummary, sampled_letters, submission_notes, summarize
from schemas.run import RunRecord
from schemas.tables import BATCH_FILE_TYPES
from transforms.catalog.factory import catalog_provider
from transforms.delivery import DeliveryReport
from transforms.exclusion_counts import CountExclusions
from transforms.io.bounded import SinkRefused, SinkTimeout, refusal
from transforms.io.row_files import WriteJsonl, output_prefix
from transforms.io.table_commit import TableRun, drop_staging
from transforms.job_outputs import DeadLetters, OutputPlan
from transforms.pack import PackRequests
from transforms.pack_job import JobSteps, parse_pack_write
from transforms.parse import ParseRequests
from transforms.progress import (
    PACKED,
    READ,
    REFUSED,
    ProgressMonitor,
    TrackProgress,
    input_size,
)
from transforms.record_files import ReadRecords, matching_files
from transforms.run_metrics import PromptTokenPercentiles
from transforms.sinks import PromptDelivery
from transforms.staging import acquire, files_under, release, run_files, staging_name

_LOG = logging.getLogger(__name__)


def output_files(output: str) -> dict[str, str]:
    """Where each output of a run lands as files (globs)."""
    return {
        name: f"{output_prefix(output, name)}-*.{ext}" for name, ext in BATCH_FILE_TYPES.items()
    }


def pack_transform(p: beam.Pipeline, settings: Settings) -> PackRequests:
    """The pack step, the catalog where the chosen mode keeps it (see `--catalog_mode`)."""
    provider = catalog_provider(p, settings.catalog, streaming=False)
    return PackRequests(settings.config, provider, settings.event_time)


def run_record(settings: Settings, without_evidence: int | None = None) -> RunRecord:
    """What the run reads and how, for `runs/` (the report's run panel); `without_evidence`,
    how many of its prompts carry no evidence, once the run counted them."""
    config = settings.config
    return RunRecord(
        builder_version=BUILDER_VERSION,
        config_hash=config.config_hash(),
        prompt_format=config.prompt_format,
        model=config.format_model,
        input=settings.input,
        input_format=settings.input_format,
        input_shape=settings.input_shape,
        catalog=settings.catalog.pattern,
        catalog_mode=settings.catalog.mode,
        event_time=settings.event_time,
        run_id=settings.run_id,
        job=settings.job,
        run_key=settings.run_key,
        without_evidence="hold" if settings.sinks.hold_without_evidence else "send",
        prompts_without_evidence=without_evidence,
        input_limit=config.input_limit,
        reserved_answer=config.reserved_answer,
        max_evidence_tokens=config.max_evidence_tokens,
    )


def build(
    p: beam.Pipeline,
    settings: Settings,
    final_commit: FinalCommit | None = None,
    progress_board: Path | None = None,
) -> None:
    """Compose the batch job; every stage is a transform from `transforms/`.

    With `final_commit` the job commits its own staged files as its last step
    (the Dataflow launcher does not wait for the job to commit after it). With
    `progress_board`, the records read (against the input's size), the requests
    packed and the records refused are counted there (`transforms.progress`). The
    run record goes to `runs/`.
    """
    record, pack = run_record(settings), pack_transform(p, settings)  # this job's own parts
    records = p | "ReadRequests" >> ReadRecords(
        settings.input, settings.input_format, settings.max_record_bytes
    )
    if progress_board is not None:
        size = input_size(settings.input, settings.input_format)
        board = str(progress_board)
        records = records | "ProgressRead" >> TrackProgress(board, READ, size)
    plan = OutputPlan(
        sinks=replace(settings.sinks, output=settings.output),  # where this run stages its files
        prompt_limits=settings.config.format.limits,
        count_exclusions=CountExclusions(),
        run_id=settings.run_id,
        delivery=PromptDelivery(settings.sink_timeout_seconds, publish_now=False),
    )
    parse = ParseRequests(settings.input_shape, settings.max_record_bytes)
    job = parse_pack_write(records, JobSteps(parse, pack, plan), DeadLetters())
    packed, outputs = job.packed, job.outputs
    if progress_board is not None:  # not the sinks' letters: they come from packed rows
        _ = packed.manifests | "ProgressPacked" >> TrackProgress(board, PACKED, size)
        for stage, refused in job.letters.of("Parse", "Pack").items():
            _ = refused | f"ProgressRefused{stage}" >> TrackProgress(board, REFUSED, size)
    written = outputs.files
    written.append(
        p
        | "RunRecord" >> beam.Create([record])
        | "WriteRunRecord" >> WriteJsonl(settings.output, "runs")
    )
    _ = packed.prompts | "TokenPercentiles" >> PromptTokenPercentiles()
    if final_commit is not None:
        counted = {
            "Records": records,
            "Prompts": packed.prompts,
            "DeadLetters": outputs.dead_letters,
            "WithoutEvidence": packed.manifests
            | "NoEvidence" >> beam.Filter(lambda m: not m.evidence),
        }
        commit_last(p, final_commit, counted, written)


def earlier_run(output: str, overwrite: bool) -> list[str]:
    """The files an earlier run left under `output` (`transforms.run_folder.run_files`: its
    outputs and what verify and replay wrote for it); refused unless `overwrite`.

    Shards of two runs would otherwise mix under the same globs.
    """
    stale = run_files(output, BATCH_FILE_TYPES)
    if stale and not overwrite:
        raise ValueError(
            f"--output {output!r} already holds {len(stale)} files of an earlier run "
            f"(e.g. {stale[0]}); pass --overwrite to replace them, or choose another --output"
        )
    return stale


@dataclass(frozen=True)
class BatchRun:
    """A finished run: its settings and summary."""

    settings: Settings
    summary: RunSummary
    delivery: DeliveryReport | None = None
    """What became of the prompts for `--prompts_topic`; None without one, or when the run
    was refused (then nothing is published)."""


def start(
    argv: list[str] | None = None,
    *,
    clear_outputs: bool = True,
    staging: str | None = None,
    settings: Settings | None = None,
    tables: TableRun | None = None,
) -> tuple[PipelineResult, Settings]:
    """Parse flags, check for an earlier run's outputs and start the job.

    With `staging` (a directory name under --output) every output is written
    there, for `run` to commit, and with `tables` the audit rows go to that run's
    BigQuery staging tables; without it, in place, after deleting the
    outputs of an earlier run when `--overwrite` allows. The Dataflow launcher
    passes `clear_outputs=False`: it must return at once and may not reach the
    output bucket, so the job stages its files and commits them itself as its
    last step (`transforms.staging.commit_finished`); its audit rows go straight
    to the tables (load jobs). `settings` are those `run`
    already resolved from `argv`: resolving reads and checks a local catalog whole.
    """
    options = PipelineOptions(argv)
    settings = settings or resolve(options)
    overwrite = options.view_as(SinkOptions).overwrite
    final_commit = None
    if clear_outputs:
        stale = earlier_run(settings.output, overwrite)
        if stale and staging is None:
            FileSystems.delete(stale)
    else:
        staging = staging or staging_name(settings.run_id)
        final_commit = FinalCommit(
            f"{settings.output}/{staging}",
            settings.output,
            overwrite,
            options.view_as(GateOptions).max_dead_letter_percent,
            settings.sinks.prompts_topic,
            settings.run_id,
            settings.sink_timeout_seconds,
        )
        require_reachable(
            options, settings.sinks, settings.sink_timeout_seconds, settings.create_tables
        )
        ready_tables(settings)
    pin_local_runner(options, BATCH_RUNNER)
    _LOG.info("evpack batch settings: %s", settings_summary(settings))
    pipeline = beam.Pipeline(options=options)
    written = settings
    if staging:
        written = replace(written, output=f"{settings.output}/{staging}")
    if tables is not None:
        written = replace(written, sinks=replace(written.sinks, table_prefix=tables.prefix))
    if options.view_as(StandardOptions).runner != BATCH_RUNNER:
        build(pipeline, written, final_commit)  # a remote runner shows its own progress
        return pipeline.run(), settings
    with ProgressMonitor() as progress:  # the local runner returns once the run is over
        build(pipeline, written, final_commit, progress.board)
        return pipeline.run(), settings


def run(argv: list[str] | None = None) -> BatchRun:
    """Run the batch job to completion under the output's lock, decide whether it failed,
    commit its files then its BigQuery rows, summarize.

    Raises `OutputBusy` (a ValueError) when another run holds the output,
    `RerunRefused` (a ValueError) when the job's rows are in the dataset and
    `--overwrite` was not given, and `RunFailed` when the pipeline, a gate or a
    commit fails once files were written: then nothing of the run was committed.
    """
    started = time.monotonic()
    options = PipelineOptions(argv)
    settings = resolve(options)
    check_numbers(options, ((GateOptions, None),))
    require_reachable(
        options, settings.sinks, settings.sink_timeout_seconds, settings.create_tables
    )
    try:
        return _bounded_run(argv, options, settings, started)
    except SinkTimeout as err:
        raise RunFailed(str(err)) from err
    except SinkRefused as err:
        raise RunFailed(f"{err}; {err.left}") from err


def _bounded_run(
    argv: list[str] | None, options: PipelineOptions, settings: Settings, started: float
) -> BatchRun:
    """`run` once its flags are checked: every sink call within `--sink_timeout_seconds`
    (`pipelines.run_commit.Phases`)."""
    limit = options.view_as(GateOptions).max_dead_letter_percent
    overwrite = options.view_as(SinkOptions).overwrite
    staging = staging_name(settings.run_id)
    output = settings.output
    staged = f"{output}/{staging}"
    phases = Phases(settings, staged)
    tables = table_run(settings)
    lock = phases.files("lock")(partial(acquire, output, staging), "taking the lock")
    try:
        replaced = phases.files("lock")(partial(earlier_run, output, overwrite), "listing it")
        prepare = partial(prepare_tables, settings, tables, overwrite)
        earlier = phases.tables("lock")(prepare, "checking the job's earlier run")
        try:
            result = phases.staged(
                partial(_finished, argv, output, staging, settings, tables), tables
            )
            phases.check_lock()
            commit = phases.files("commit")
            staged_summary = commit(partial(_summary, result, started, staged), "reading counts")
            decide_failure(staged_summary, limit, staged, tables)
            count = partial(count_in_record, staged, staged_summary.prompts_without_evidence)
            commit(count, "recording the counts")
            commit_files(output, staging, replaced, commit)
        except BaseException as err:
            if tables is not None and not isinstance(err, SinkTimeout):
                drop = partial(drop_staging, tables)
                clean_up(drop, phases.tables("staging"), "dropping its staging tables")
            raise
        record = run_record(settings, staged_summary.prompts_without_evidence)
        rows = phases.tables("table commit")(
            partial(commit_rows, tables, record, output, earlier), "committing the rows"
        )
        delivery = deliver(settings, phases.files("delivery"))  # committed: publish
    finally:
        clean_up(partial(release, lock), phases.files("lock"), "giving the lock back")
    summary = phases.files("delivery")(partial(_summary, result, started, output), "summing up")
    notes = submission_notes(settings.config, summary.outputs.get("prompts"))
    summary = replace(summary, submission=notes)
    if rows is not None:
        summary = replace(summary, outputs={**summary.outputs, "bigquery": rows})
    return BatchRun(settings=settings, summary=summary, delivery=delivery)


def _summary(result: PipelineResult, started: float, where: str) -> RunSummary:
    """The run's summary from its metrics, with its outputs and dead letters under `where`
    (the staging folder before the commit, `--output` after)."""
    files = output_files(where)
    letters = sampled_letters(files["dead_letters"])
    written = {name: glob for name, glob in files.items() if matching_files(glob)}
    return summarize(result.metrics(), time.monotonic() - started, written, letters)


def _finished(
    argv: list[str] | None,
    output: str,
    staging: str,
    settings: Settings,
    tables: TableRun | None,
) -> PipelineResult:
    """Start the job into `staging` and wait for it; a failure names what it left."""
    try:
        result, _ = start(argv, staging=staging, settings=settings, tables=tables)
        result.wait_until_finish()
    except Exception as err:
        left = files_under(f"{output}/{staging}")
        # files, not only the directory: Cloud Storage has none, only objects under a prefix
        if not left and not FileSystems.exists(f"{output}/{staging}"):
            raise  # it failed before writing anything: bad flags, an unreadable catalog
        cause = refusal(err, f"{output}/{staging}")
        if cause is not None:  # a filesystem refusal: Beam's own message is a traceback
            left = f"nothing was committed; its files are under {output}/{staging}/"
            raise SinkRefused(f"{cause} (in the staging phase)", left) from err
        raise RunFailed(
            f"the run failed ({type(err).__name__}: {err}); nothing was committed under "
            f"{output} (an earlier run's outputs are untouched); its {len(left)} partial "
            f"files are under {output}/{staging}/, safe to delete"
        ) from err
    return result


def _run_and_print(argv: list[str]) -> int:
    try:
        finished = run(argv)
    except RunFailed as failed:
        if failed.summary is not None:
            print(failed.summary.render())
        raise
    print(finished.summary.render())
    if finished.delivery is not None:
        print("\n".join(finished.delivery.lines()))
        failure = finished.delivery.failure()
        if failure is not None:
            raise CommandFailed(failure)
    return 0


HELP = CommandHelp(
    "Pack request files into prompts and audit tables.",
    required={
        "input": "required",
        "output": "required",
        "catalog": "required unless --bigtable_table",
    },
)
"""What `evpack batch --help` says beyond the flags' own text."""


def main(argv: list[str] | None = None) -> int:
    """Console entry: run, print the summary; bad flags exit 2 with the reason; a run that
    made no prompt, or more dead letters than `--max_dead_letter_percent`, exits 1."""
    return run_command("evpack batch", HELP, BATCH_SECTIONS, _run_and_print, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
