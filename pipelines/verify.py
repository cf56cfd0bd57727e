"""`evpack verify`: a batch API's answers checked against the run that built the prompts.

    evpack verify --answers 'results/*.jsonl' --run out/run1 [--requests 'in/*.jsonl'] \\
        [--output out/run1] [--overwrite] [--bigquery_dataset PROJECT.DATASET]

`--run` is the batch job's `--output` (prompts/, manifests/, exclusions/);
`--requests` the request files it read, which enables the excluded-text check.
Rows go to `<output>/verifications/` (Parquet, default output: the run, so
`evpack report --audit <run>` shows them) and unreadable lines to
`<output>/verify_dead_letters/`. With `--bigquery_dataset PROJECT.DATASET` the
rows are also inserted into its `verifications` table (created when missing;
rows BigQuery rejects are dead letters too). Runner: as the batch job.
"""

import argparse
import logging
import sys
import time
from collections import Counter

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.parquetio import ReadFromParquet
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.batch import LOCAL_RUNNER
from pipelines.command import run_command
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
from transforms.bigquery_io import WriteToBigQueryRows, bigquery_client, create_tables
from transforms.files import WriteJsonl, WriteParquet, output_prefix
from transforms.parse import ParseRequests
from transforms.record_files import ReadRecords, matching_files, read_parquet
from transforms.verify import VerifyAnswers

VERIFY_OUTPUTS = ("verifications", "verify_dead_letters")


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


HELP_SECTIONS = (
    (VerifyOptions, None),
    (
        EvpackOptions,
        frozenset({"run", "output", "overwrite", "max_record_bytes", "bigquery_dataset"}),
    ),
)
"""The flags `evpack verify` reads, as its --help lists them."""


def _require_files(pattern: str, what: str) -> None:
    if not matching_files(pattern):
        raise ValueError(f"{what} {pattern!r} matches no file")


def build(
    p: beam.Pipeline,
    answers: str,
    run: str,
    requests: str | None,
    output: str,
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
            | "ReadRequests" >> ReadRecords(requests, file_format(requests, "auto", "requests"))
            | "ParseRequests" >> ParseRequests("auto", max_record_bytes)
        )
    lines = p | "ReadAnswers" >> ReadRecords(answers, "jsonl")
    verified = lines | "Verify" >> VerifyAnswers(
        prompts, manifests, parsed.requests if parsed else None, exclusions
    )
    _ = verified.rows | "WriteRows" >> WriteParquet(output, "verifications", VerificationRow)
    dead_letters = verified.dead_letters
    if dataset is not None:
        rejected = verified.rows | "InsertRows" >> WriteToBigQueryRows(
            f"{dataset}.verifications", row_id=verification_row_id
        )
        dead_letters = (dead_letters, rejected) | "AllDeadLetters" >> beam.Flatten()
    _ = dead_letters | "WriteDeadLetters" >> WriteJsonl(output, "verify_dead_letters")


def verification_row_id(row: dict) -> str:
    """insertId of a verification row: one per answer line's id and request."""
    return f"{row['request_id']}/{row['answer_key']}"


def summarize(output: str) -> str:
    """Rows by status and failed checks, read back from the written files."""
    files = matching_files(f"{output_prefix(output, 'verifications')}-*.parquet")
    rows = [r for f in files for r in read_parquet(f).to_pylist()]
    status = Counter(r["status"] for r in rows)
    checked = [r for r in rows if r["passed"] is not None]
    failed = Counter(name for r in checked for name in r["failed_checks"])
    lines = [
        f"evpack verify: {len(rows)} answers",
        "  status          " + ", ".join(f"{k} {v}" for k, v in sorted(status.items())),
        f"  checked         {len(checked)} (passed {sum(1 for r in checked if r['passed'])})",
    ]
    if failed:
        lines.append(
            "  failed checks   " + ", ".join(f"{k} {v}" for k, v in sorted(failed.items()))
        )
    lines.append(f"  rows            {output_prefix(output, 'verifications')}-*.parquet")
    return "\n".join(lines)


def run(argv: list[str] | None = None) -> str:
    """Run verification to completion; returns the summary."""
    options = PipelineOptions(argv)
    opts = options.view_as(VerifyOptions)
    shared = options.view_as(EvpackOptions)
    if not opts.answers or not shared.run:
        raise ValueError(
            "--answers and --run are required, e.g. --answers results.jsonl --run out/run1"
        )
    check_numbers(max_record_bytes=shared.max_record_bytes)
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
    stale = [
        f
        for name in VERIFY_OUTPUTS
        for f in matching_files(f"{output_prefix(output, name)}-*.{OUTPUTS[name].file_type}")
    ]
    if stale and not shared.overwrite:
        raise ValueError(
            f"{output} already holds verification files; pass --overwrite to replace them"
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
        build(p, opts.answers, run_dir, opts.requests, output, shared.max_record_bytes, dataset)
    return summarize(output)


def _run_and_print(argv: list[str]) -> int:
    started = time.monotonic()
    print(run(argv))
    print(f"  done in {time.monotonic() - started:.1f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_command(
        "evpack verify", __doc__, HELP_SECTIONS, _run_and_print, argv, log_level=logging.WARNING
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
