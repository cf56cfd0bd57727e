"""`evpack verify`: a batch API's answers checked against the run that built the prompts.

    evpack verify --answers 'results/*.jsonl' --run out/run1 [--requests 'in/*.jsonl'] \\
        [--answer_set NAME] [--max_failed 0 | 25 | 2%] [--output out/run1] [--overwrite] \\
        [--bigquery_dataset PROJECT.DATASET]

`--run` is the batch job's `--output` (prompts/, manifests/, exclusions/);
`--requests` the request files it read, which enables the excluded-text check.
Rows go to `<output>/verifications/<answer set>/` (Parquet; default output:
the run, so `evpack report --audit <run>` shows them) and unreadable lines to
`<output>/verify_dead_letters/<answer set>/`. The answer set is named by
`--answer_set`, by default after the answers file (`results/*.jsonl`:
`results`), so a second answer set (a retry, another model) goes beside the
first; the same set again needs `--overwrite`. With `--bigquery_dataset
PROJECT.DATASET` the rows are also inserted into its `verifications` table
(created when missing; rows BigQuery rejects are dead letters too).

`--max_failed` gates a CI job: a count (`0`, `25`) or a share (`2%`) of
answers that did not pass (a failed check, an API failure, an answer that
could not be checked) plus prompts that got no answer; when exceeded the
command exits 1 after writing every row. Runner: as the batch job.
"""

import argparse
import logging
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.parquetio import ReadFromParquet
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.batch import LOCAL_RUNNER
from pipelines.command import UsageError, run_command
from pipelines.options import (
    EvpackOptions,
    check_numbers,
    check_writable,
    dataset_name,
    file_format,
    pin_local_runner,
)
from schemas import ExclusionRecord, ManifestRow
from schemas.tables import AUDIT_TABLES, OUTPUTS
from schemas.verification import VerificationRow
from transforms.io.bigquery import WriteToBigQueryRows, bigquery_client, create_tables
from transforms.io.row_files import WriteJsonl, WriteParquet, output_prefix
from transforms.parse import ParseRequests
from transforms.record_files import ReadRecords, matching_files, read_parquet
from transforms.verify import ReadAnswerLines, VerifyAnswers

VERIFY_OUTPUTS = ("verifications", "verify_dead_letters")
GATE_EXCEEDED = 1
"""Exit status when `--max_failed` is exceeded (2 stays a usage error)."""
_SET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class VerifyOptions(PipelineOptions):
    """Flags of `evpack verify`."""

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--answers", help="Result lines of a batch API (or {request_id, answer})."
        )
        parser.add_argument(
            "--requests", help="The run's request files (enables no_excluded_text)."
        )
        parser.add_argument(
            "--answer_set",
            help="Folder name of this answer set under verifications/ (default: the answers "
            "file's name, or its folder's for a glob).",
        )
        parser.add_argument(
            "--max_failed",
            help="Exit 1 when more answers than this fail (or prompts go unanswered): a count "
            "(0, 25) or a share (2%%).",
        )


HELP_SECTIONS = (
    (VerifyOptions, None),
    (
        EvpackOptions,
        frozenset({"run", "output", "overwrite", "max_record_bytes", "bigquery_dataset"}),
    ),
)
"""The flags `evpack verify` reads, as its --help lists them."""


def answer_set_name(pattern: str) -> str:
    """The default answer-set name: the answers file's name up to its first dot and any
    wildcard ("out/claude-*.jsonl": "claude"), else its folder's ("results/*.jsonl":
    "results"), with characters other than letters, digits, `_.-` made `_`."""
    for part in reversed([p for p in re.split(r"[/\\]", pattern) if p]):
        stem = re.split(r"[*?\[]", part.split(".")[0])[0].strip("-_ ")
        if stem and not stem.endswith(":"):
            return re.sub(r"[^A-Za-z0-9_.-]", "_", stem)
    return "answers"


@dataclass(frozen=True)
class FailureLimit:
    """`--max_failed`: at most `count` failures, or at most `share` of the answers."""

    count: int | None = None
    share: float | None = None

    @classmethod
    def parse(cls, text: str) -> "FailureLimit":
        value = text.strip()
        try:
            if value.endswith("%"):
                share = float(value[:-1]) / 100
                if 0 <= share <= 1:
                    return cls(share=share)
            elif int(value) >= 0:
                return cls(count=int(value))
        except ValueError:
            pass
        raise UsageError(
            f"--max_failed must be a count (0, 25) or a share in percent (2%), got {text!r}"
        )

    def exceeded(self, failures: int, total: int) -> bool:
        if self.count is not None:
            return failures > self.count
        return total > 0 and failures / total > (self.share or 0.0)

    def __str__(self) -> str:
        return str(self.count) if self.count is not None else f"{(self.share or 0) * 100:g}%"


def _require_files(pattern: str, what: str) -> None:
    if not matching_files(pattern):
        raise ValueError(f"{what} {pattern!r} matches no file")


def build(
    p: beam.Pipeline,
    answers: str,
    run: str,
    requests: str | None,
    output: str,
    answer_set: str,
    max_record_bytes: int,
    dataset: str | None = None,
) -> None:
    """Compose the verification job."""
    prompts = p | "ReadPrompts" >> ReadRecords(f"{run}/prompts/*.jsonl", "jsonl")
    manifests = (
        p
        | "ReadManifests" >> ReadFromParquet(f"{run}/manifests/*.parquet")
        | "Manifest" >> beam.Map(ManifestRow.model_validate)
    )
    exclusions = None
    parsed = None
    if requests is not None:
        exclusions = (
            p
            | "ReadExclusions" >> ReadFromParquet(f"{run}/exclusions/*.parquet")
            | "Exclusion" >> beam.Map(ExclusionRecord.model_validate)
        )
        parsed = (
            p
            | "ReadRequests"
            >> ReadRecords(requests, file_format(requests, "auto", "requests"), max_record_bytes)
            | "ParseRequests" >> ParseRequests("auto", max_record_bytes)
        )
    lines = p | "ReadAnswers" >> ReadAnswerLines(answers, max_record_bytes)
    verified = lines | "Verify" >> VerifyAnswers(
        prompts, manifests, parsed.requests if parsed else None, exclusions
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


def verification_row_id(row: dict) -> str:
    """insertId of a verification row: one per request and answer line (a rerun of the same
    answers file inserts nothing twice; two answers for one request are two rows)."""
    return f"{row['request_id']}/{row['answer_key']}/{row['answer_file']}:{row['answer_line']}"


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


def summarize(output: str, answer_set: str, run_dir: str, limit: FailureLimit | None) -> Outcome:
    """Rows by status and failed checks, prompts without an answer, and the gate."""
    prefix = output_prefix(f"{output}/verifications", answer_set)
    rows = [r for f in matching_files(f"{prefix}-*.parquet") for r in read_parquet(f).to_pylist()]
    requests = {
        r
        for f in matching_files(f"{run_dir}/manifests/*.parquet")
        for r in read_parquet(f, columns=["request_id"]).column("request_id").to_pylist()
    }
    unanswered = len(requests - {r["request_id"] for r in rows})
    status = Counter(r["status"] for r in rows)
    checked = [r for r in rows if r["status"] == "succeeded" and r["passed"] is not None]
    failed = Counter(name for r in checked for name in r["failed_checks"])
    not_passed = sum(1 for r in rows if not r["passed"])
    lines = [
        f"evpack verify: {len(rows)} answers (answer set {answer_set})",
        "  status          " + ", ".join(f"{k} {v}" for k, v in sorted(status.items())),
        f"  checked         {len(checked)} (passed {sum(1 for r in checked if r['passed'])})",
    ]
    if failed:
        lines.append("  failed checks   " + ", ".join(f"{k} {v}" for k, v in failed.most_common()))
    lines.append(f"  not passed      {not_passed} answers")
    lines.append(f"  unanswered      {unanswered} prompts of {len(requests)} had no answer")
    duplicates = sum(1 for r in rows if r["duplicate"])
    if duplicates:
        lines.append(f"  duplicates      {duplicates} answers for a request answered before")
    exceeded = False
    if limit is not None:
        failures, total = not_passed + unanswered, len(rows) + unanswered
        exceeded = limit.exceeded(failures, total)
        share = f" ({failures / total:.1%})" if total else ""
        verdict = "EXCEEDED" if exceeded else "held"
        lines.append(
            f"  gate            --max_failed={limit}: {failures} of {total}{share} "
            f"failing, {verdict}"
        )
    lines.append(f"  rows            {prefix}-*.parquet")
    return Outcome("\n".join(lines), exceeded)


def run(argv: list[str] | None = None) -> Outcome:
    """Run verification to completion; returns the summary and the gate's verdict."""
    options = PipelineOptions(argv)
    opts = options.view_as(VerifyOptions)
    shared = options.view_as(EvpackOptions)
    if not opts.answers or not shared.run:
        raise ValueError(
            "--answers and --run are required, e.g. --answers results.jsonl --run out/run1"
        )
    check_numbers(max_record_bytes=shared.max_record_bytes)
    limit = FailureLimit.parse(opts.max_failed) if opts.max_failed is not None else None
    answer_set = opts.answer_set or answer_set_name(opts.answers)
    if not _SET_NAME.fullmatch(answer_set):
        raise UsageError(
            f"--answer_set {answer_set!r} must be letters, digits and _.- (e.g. claude-run2)"
        )
    if shared.bigquery_dataset is not None:
        dataset_name(shared.bigquery_dataset)
    run_dir = shared.run.rstrip("/")
    _require_files(opts.answers, "--answers")
    _require_files(f"{run_dir}/manifests/*.parquet", "--run manifests")
    _require_files(f"{run_dir}/prompts/*.jsonl", "--run prompts")
    if opts.requests:
        _require_files(opts.requests, "--requests")
    output = (shared.output or run_dir).rstrip("/")
    check_writable(output)
    stale = _set_files(output, answer_set)
    if stale and not shared.overwrite:
        raise ValueError(
            f"{output} already holds verification files of answer set {answer_set!r}; pass "
            "--overwrite to replace them, or --answer_set NAME to keep both"
        )
    if stale:
        FileSystems.delete(stale)
    dataset = shared.bigquery_dataset
    if dataset is not None:
        create_tables(
            bigquery_client(dataset.split(".")[0]), dataset, [AUDIT_TABLES["verifications"]]
        )
    pin_local_runner(options, LOCAL_RUNNER)
    with beam.Pipeline(options=options) as p:
        build(
            p,
            opts.answers,
            run_dir,
            opts.requests,
            output,
            answer_set,
            shared.max_record_bytes,
            dataset,
        )
    return summarize(output, answer_set, run_dir, limit)


def _run_and_print(argv: list[str]) -> int:
    started = time.monotonic()
    outcome = run(argv)
    print(outcome.summary)
    print(f"  done in {time.monotonic() - started:.1f} s")
    return GATE_EXCEEDED if outcome.gate_exceeded else 0


def main(argv: list[str] | None = None) -> int:
    return run_command(
        "evpack verify", __doc__, HELP_SECTIONS, _run_and_print, argv, log_level=logging.WARNING
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
