"""`evpack verify`: a batch API's answers checked against the run that built the prompts.

    evpack verify --answers 'results/*.jsonl' --run out/run1 [--requests 'in/*.jsonl'] \\
        [--answer_set NAME] [--max_failed 0 | 25 | 2%] [--output out/run1] [--overwrite] \\
        [--bigquery_dataset PROJECT.DATASET] [--scope citation | packet] \\
        [--citation_span sentence | paragraph] [--gate_names]

`--run` is the batch job's `--output` (prompts/, or the outbox/ a run with
`--prompts_topic` staged them in, manifests/, exclusions/);
`--requests` the request files it read, which enables the excluded-text check.
Rows go to `<output>/verifications/<answer set>/` (Parquet; default output:
the run, so `evpack report --audit <run>` shows them) and unreadable lines to
`<output>/verify_dead_letters/<answer set>/`. The answer set is named by
`--answer_set`, by default after the answers file (`results/*.jsonl`:
`results`), so a second answer set (a retry, another model) goes beside the
first; the same set again needs `--overwrite`. With `--bigquery_dataset
PROJECT.DATASET` the rows are also inserted into its `verifications` table
(created when missing; rows BigQuery rejects are dead letters too); a run
whose audit rows went to that dataset (a batch run with `--bigquery_dataset`:
no manifests in its folder) has its manifests and exclusions read from it,
by the run id of its run record, so `evpack report --bigquery_dataset` shows
the answers beside the run they checked.

`--scope packet` checks every figure, date and quote of an answer against the
whole packet and skips the citation checks (answers to prompts that asked for
no citations); the default `citation` checks each sentence against the blocks
it cites, and `--citation_span paragraph` lets a paragraph's citations cover
its sentences that cite nothing. `names_supported` (a capitalised name no
source writes) is reported on every row and fails an answer only with
`--gate_names`.

`--max_failed` gates a CI job: a count (`0`, `25`) or a share (`2%`) of
answers that did not pass (a failed check, an API failure, an answer that
could not be checked), unreadable answer and prompt lines, and prompts that
got no answer; when exceeded the command exits 1 after writing every row.
Without it the exit status is 0 whatever failed, and the summary says so.
Runner: as the batch job.
"""

import json
import logging
import sys
import time
from collections import Counter
from dataclasses import dataclass

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.parquetio import ReadFromParquet
from apache_beam.options.pipeline_options import PipelineOptions
from pydantic import BaseModel

from packer.verification.checks import DEFAULTS, CheckSettings
from pipelines.command import run_command
from pipelines.options.help import CommandHelp
from pipelines.options.input import file_format
from pipelines.options.runner import BATCH_RUNNER, pin_local_runner
from pipelines.options.verify import (
    VERIFY_SECTIONS,
    FailureLimit,
    VerifySettings,
    resolve_verify,
)
from schemas import ExclusionRecord, ManifestRow
from schemas.prompt_formats import answer_keys
from schemas.tables import OUTPUTS
from schemas.verification import Scope, VerificationRow
from transforms.io.bigquery import WriteToBigQueryRows, create_audit_tables
from transforms.io.row_files import WriteJsonl, WriteParquet, output_prefix
from transforms.io.run_rows import ReadRunRows
from transforms.parse import ParseRequests
from transforms.record_files import ReadRecords, matching_files, read_parquet
from transforms.run_folder import prompt_line_globs, staged_prompt_glob
from transforms.run_prompts import run_prompts
from transforms.sinks import unqueued, verification_row_id
from transforms.verification.verify import ReadAnswerLines, VerifyAnswers

VERIFY_OUTPUTS = ("verifications", "verify_dead_letters")
SCOPE_NOTES: dict[Scope, str] = {
    "citation": "citation: each sentence against the blocks it cites",
    "packet": "packet: every figure, date and quote against the whole packet; "
    "citation checks skipped",
}
SPAN_NOTES = {"sentence": "", "paragraph": "; a citation covers its paragraph's uncited sentences"}
ROWS_TIMEOUT_SECONDS = 60
"""How long each call reading a run's rows from BigQuery may wait for an answer."""
GATE_EXCEEDED = 1
"""Exit status when `--max_failed` is exceeded (2 stays a usage error)."""


def build(p: beam.Pipeline, settings: VerifySettings) -> None:
    """Compose the verification job."""
    run, requests, max_record_bytes = settings.run, settings.requests, settings.max_record_bytes
    output, answer_set, dataset = settings.output, settings.answer_set, settings.dataset
    staged = staged_prompt_glob(run)  # a run with --prompts_topic: lines staged for it
    globs = prompt_line_globs(run) or ([] if staged else [f"{run}/prompts/*.jsonl"])
    read = [
        p | f"ReadPrompts{k or ''}" >> ReadRecords(pattern, "jsonl")
        for k, pattern in enumerate(globs)
    ]  # held ones too: answered later
    if staged is not None:
        read.append(
            p
            | "ReadStagedPrompts" >> ReadRecords(staged, "jsonl")
            | "Unqueued" >> beam.MapTuple(lambda source, text: (source, unqueued(text)))
        )
    prompts = tuple(read) | "AllPrompts" >> beam.Flatten()
    manifests = _audit_rows(p, settings, "manifests", ManifestRow)
    exclusions = None
    parsed = None
    if requests is not None:
        exclusions = _audit_rows(p, settings, "exclusions", ExclusionRecord)
        parsed = (
            p
            | "ReadRequests"
            >> ReadRecords(requests, file_format(requests, "auto", "requests"), max_record_bytes)
            | "ParseRequests" >> ParseRequests("auto", max_record_bytes)
        )
    lines = p | "ReadAnswers" >> ReadAnswerLines(settings.answers, max_record_bytes)
    verified = lines | "Verify" >> VerifyAnswers(
        prompts,
        manifests,
        parsed.requests if parsed else None,
        exclusions,
        settings.checks,
        answer_set,
    )
    _ = verified.rows | "WriteRows" >> WriteParquet(
        f"{output}/verifications", answer_set, VerificationRow
    )
    dead_letters = verified.dead_letters
    if dataset is not None:
        rejected = verified.rows | "InsertRows" >> WriteToBigQueryRows(
            f"{dataset}.verifications", row_id=verification_row_id
        )
        dead_letters = (dead_letters, rejected) | "AllDeadLetters" >> beam.Flatten()
    _ = dead_letters | "WriteDeadLetters" >> WriteJsonl(f"{output}/verify_dead_letters", answer_set)


def _audit_rows(
    p: beam.Pipeline, settings: VerifySettings, table: str, model: type[BaseModel]
) -> beam.PCollection:
    """The run's rows of one audit table: its folder's Parquet files, or, for a run whose
    audit rows went to BigQuery, its rows in the dataset (`transforms.io.run_rows`)."""
    name = f"Read{table.title()}"
    if settings.rows_in_dataset is not None and settings.dataset is not None:
        return p | name >> ReadRunRows(
            settings.dataset, table, settings.rows_in_dataset, ROWS_TIMEOUT_SECONDS
        )
    return (
        p
        | name >> ReadFromParquet(f"{settings.run}/{table}/*.parquet")
        | f"{model.__name__}s" >> beam.Map(model.model_validate)
    )


def _set_files(output: str, answer_set: str) -> list[str]:
    return [
        f
        for name in VERIFY_OUTPUTS
        for f in matching_files(
            f"{output_prefix(f'{output}/{name}', answer_set)}-*.{OUTPUTS[name].file_type}"
        )
    ]


@dataclass(frozen=True)
class Outcome:
    """What a verification run tells its caller: the summary, and whether the gate held."""

    summary: str
    gate_exceeded: bool


def _dead_letters(output: str, answer_set: str) -> tuple[Counter[str], str]:
    """The answer set's dead letters by stage (unreadable answer and prompt lines, rows a
    sink refused), and where they are."""
    prefix = output_prefix(f"{output}/verify_dead_letters", answer_set)
    stages: Counter[str] = Counter()
    for f in matching_files(f"{prefix}-*.jsonl"):
        with FileSystems.open(f) as handle:
            stages.update(json.loads(line)["stage"] for line in handle if line.strip())
    return stages, f"{prefix}-*.jsonl"


def _failed_line(failed: Counter[str], checks: CheckSettings) -> list[str]:
    """The summary's count of each failed check; names_supported says when it does not gate."""
    if not failed:
        return []
    line = "  failed checks   " + ", ".join(f"{k} {v}" for k, v in failed.most_common())
    if failed["names_supported"] and not checks.gate_names:
        line += " (names_supported reported only: --gate_names to gate on it)"
    return [line]


@dataclass(frozen=True)
class PromptCounts:
    """A run's prompts as `evpack verify` counts them against an answer set."""

    sent: int
    unanswered: int
    """Of `sent`, those no answer names."""
    held: int
    """Held in `held_prompts/`, never sent: never unanswered."""


def prompt_counts(run_dir: str, rows: list[dict]) -> PromptCounts:
    """The run's prompts from its prompt lines (`transforms.run_prompts`), so a run whose
    audit rows went to BigQuery counts as the same run written to files; a folder without
    prompt lines (a streaming run's) by its manifests. A prompt is answered when a row
    names it by any key its request goes by (`schemas.prompt_formats.answer_keys`)."""
    answered = {r["answer_key"] for r in rows} | {
        key for r in rows if r["request_id"] for key in answer_keys(r["request_id"])
    }
    prompts = run_prompts(run_dir)
    if prompts is None:
        sent = {
            r
            for f in matching_files(f"{run_dir}/manifests/*.parquet")
            for r in read_parquet(f, columns=["request_id"]).column("request_id").to_pylist()
        }
        return PromptCounts(len(sent), len(sent - answered), 0)
    return PromptCounts(len(prompts.sent), len(prompts.sent - answered), len(prompts.held))


def summarize(
    output: str,
    answer_set: str,
    run_dir: str,
    limit: FailureLimit | None,
    checks: CheckSettings = DEFAULTS,
) -> Outcome:
    """Rows by status and failed checks, unreadable lines, prompts without an answer, the
    gate (or, without one, that the exit status does not gate)."""
    prefix = output_prefix(f"{output}/verifications", answer_set)
    rows = [r for f in matching_files(f"{prefix}-*.parquet") for r in read_parquet(f).to_pylist()]
    prompts = prompt_counts(run_dir, rows)
    unanswered = prompts.unanswered
    status = Counter(r["status"] for r in rows)
    checked = [r for r in rows if r["status"] == "succeeded" and r["passed"] is not None]
    failed = Counter(name for r in checked for name in r["failed_checks"])
    not_passed = sum(1 for r in rows if not r["passed"])
    letters, letters_at = _dead_letters(output, answer_set)
    unreadable = sum(letters.values())
    lines = [
        f"evpack verify: {len(rows)} answers (answer set {answer_set})",
        f"  scope           {SCOPE_NOTES[checks.scope]}{SPAN_NOTES[checks.citation_span]}",
        "  status          " + ", ".join(f"{k} {v}" for k, v in sorted(status.items())),
        f"  checked         {len(checked)} (passed {sum(1 for r in checked if r['passed'])})",
    ]
    lines += _failed_line(failed, checks)
    lines.append(f"  not passed      {not_passed} answers")
    if unreadable:
        stages = ", ".join(f"{k} {v}" for k, v in sorted(letters.items()))
        lines.append(f"  unreadable      {unreadable} lines ({stages}): {letters_at}")
    lines.append(f"  unanswered      {unanswered} prompts of {prompts.sent} had no answer")
    if prompts.held:
        lines.append(
            f"  held            {prompts.held} prompts held, never sent (held_prompts/): "
            "not counted as unanswered"
        )
    duplicates = sum(1 for r in rows if r["duplicate"])
    if duplicates:
        lines.append(f"  duplicates      {duplicates} answers for a request answered before")
    exceeded = False
    failures, total = not_passed + unanswered + unreadable, len(rows) + unanswered + unreadable
    if limit is not None:
        exceeded = limit.exceeded(failures, total)
        share = f" ({failures / total:.1%})" if total else ""
        verdict = "EXCEEDED" if exceeded else "held"
        lines.append(
            f"  gate            --max_failed={limit}: {failures} of {total}{share} "
            f"failing, {verdict}"
        )
    elif failures:
        lines.append(
            f"  gate            none: {failures} of {total} failing, yet the exit status is 0; "
            "pass --max_failed=0 (or a count, or a share such as 2%) to exit 1 when more fail"
        )
    lines.append(f"  rows            {prefix}-*.parquet")
    return Outcome("\n".join(lines), exceeded)


def run(argv: list[str] | None = None) -> Outcome:
    """Run verification to completion; returns the summary and the gate's verdict."""
    options = PipelineOptions(argv)
    settings = resolve_verify(options)
    stale = _set_files(settings.output, settings.answer_set)
    if stale and not settings.overwrite:
        raise ValueError(
            f"{settings.output} already holds verification files of answer set "
            f"{settings.answer_set!r}; pass --overwrite to replace them, or --answer_set NAME "
            "to keep both"
        )
    if stale:
        FileSystems.delete(stale)
    create_audit_tables(settings.dataset, ["verifications"])
    pin_local_runner(options, BATCH_RUNNER)
    with beam.Pipeline(options=options) as p:
        build(p, settings)
    return summarize(
        settings.output, settings.answer_set, settings.run, settings.limit, settings.checks
    )


def _run_and_print(argv: list[str]) -> int:
    started = time.monotonic()
    outcome = run(argv)
    print(outcome.summary)
    print(f"  done in {time.monotonic() - started:.1f} s")
    return GATE_EXCEEDED if outcome.gate_exceeded else 0


def main(argv: list[str] | None = None) -> int:
    return run_command(
        "evpack verify", HELP, VERIFY_SECTIONS, _run_and_print, argv, log_level=logging.WARNING
    )


HELP = CommandHelp(
    __doc__,
    required={"answers": "required", "run": "required"},
    flags={
        "output": "Folder of the rows: <output>/verifications/<answer set>/ and "
        "<output>/verify_dead_letters/<answer set>/ (default: --run).",
        "bigquery_dataset": "Also insert the rows into the verifications table of this "
        "dataset, <project>.<dataset> (created when missing).",
        "overwrite": "Replace the rows of the same answer set (default: refuse).",
        "max_record_bytes": "Answer and prompt lines larger than this are dead-lettered unread.",
    },
    titles={"SinkOptions": "Where the rows go", "InputOptions": "The limit on what is read"},
)
"""What `evpack verify --help` says beyond the flags' own text."""


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
