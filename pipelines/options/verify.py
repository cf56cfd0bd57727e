"""The answer checks: `evpack verify` (answer files against a run) and `evpack
verify-stream` (answers from a subscription)."""

import argparse
import re
from dataclasses import dataclass

from apache_beam.options.pipeline_options import PipelineOptions

from packer.parsing.names import DEFAULT_PROMPT_TTL_SECONDS
from packer.verification.checks import DEFAULTS, SCOPES, CheckSettings
from packer.verification.claims import CITATION_SPANS
from pipelines.command import UsageError
from pipelines.options.flags import Flag, Section, check_numbers, declare
from pipelines.options.input import InputOptions
from pipelines.options.sinks import (
    SinkOptions,
    check_inputs_outside,
    check_literal,
    check_output,
    dataset_name,
    resource_name,
)
from pipelines.options.stored_run import StoredRunOptions, check_whole_run
from transforms.record_files import matching_files
from transforms.run_folder import prompt_line_globs, recorded_run_id, staged_prompt_glob

_SET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class VerifyOptions(PipelineOptions):
    """The answers to check."""

    FLAGS = (
        Flag("answers", "Result lines of a batch API (or {request_id, answer})."),
        Flag("requests", "The run's request files (enables no_excluded_text)."),
        Flag(
            "answer_set",
            "Folder name of this answer set under verifications/ (default: the answers "
            "file's name, or its folder's for a glob).",
        ),
        Flag(
            "max_failed",
            "Exit 1 when more answers than this fail (or prompts go unanswered): a count "
            "(0, 25) or a share (2%%).",
        ),
        Flag(
            "scope",
            "What a figure, date or quote is checked against: citation, the blocks its "
            "sentence cites (and the citation checks run); packet, every block of the "
            "prompt (for answers of prompts that asked for no citations; citation checks "
            "skipped).",
            default="citation",
            choices=SCOPES,
        ),
        Flag(
            "citation_span",
            "What a citation covers: sentence, the sentence it ends; paragraph, also the "
            "sentences of its paragraph that cite nothing (answers that cite once after a "
            "paragraph).",
            default="sentence",
            choices=CITATION_SPANS,
        ),
        Flag(
            "gate_names",
            "Fail an answer whose names_supported check fails (default: report the check, "
            "and pass the answer on the other checks).",
            switch=True,
        ),
    )

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        declare(parser, cls.FLAGS)


class VerifyStreamOptions(PipelineOptions):
    """The answer and prompt streams to join."""

    FLAGS = (
        Flag("answers_subscription", "Result lines, one per message."),
        Flag("prompts_subscription", "A subscription to the prompts topic."),
        Flag(
            "prompt_ttl_seconds",
            "How long a prompt (or an early answer) waits for the other.",
            default=DEFAULT_PROMPT_TTL_SECONDS,
            type=int,
            bound="positive",
        ),
    )

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        declare(parser, cls.FLAGS)


VERIFY_SECTIONS: tuple[Section, ...] = (
    (VerifyOptions, None),
    (StoredRunOptions, None),
    (SinkOptions, frozenset({"output", "overwrite", "bigquery_dataset"})),
    (InputOptions, frozenset({"max_record_bytes"})),
)
"""The flags `evpack verify` reads, as its --help lists them."""

VERIFY_STREAM_SECTIONS: tuple[Section, ...] = (
    (VerifyStreamOptions, None),
    (SinkOptions, frozenset({"bigquery_dataset"})),
)
"""The flags `evpack verify-stream` reads."""


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


@dataclass(frozen=True)
class VerifySettings:
    """Validated settings of one `evpack verify` run."""

    answers: str
    run: str
    requests: str | None
    output: str
    answer_set: str
    max_record_bytes: int
    dataset: str | None
    limit: FailureLimit | None
    overwrite: bool
    checks: CheckSettings = DEFAULTS
    """How the answers are checked: `--scope`, `--citation_span`, `--gate_names`."""
    rows_in_dataset: str | None = None
    """The run's id, when its manifests and exclusions are read from `dataset` (its audit
    rows went to BigQuery), not from its folder."""


def _require_files(pattern: str, what: str) -> None:
    if not matching_files(pattern):
        raise ValueError(f"{what} {pattern!r} matches no file")


def resolve_verify(options: PipelineOptions) -> VerifySettings:
    """Check the flags of `evpack verify` and that the files they name exist."""
    opts = options.view_as(VerifyOptions)
    run = options.view_as(StoredRunOptions).run
    sinks = options.view_as(SinkOptions)
    if not opts.answers or not run:
        raise ValueError(
            "--answers and --run are required, e.g. --answers results.jsonl --run out/run1"
        )
    check_numbers(options, VERIFY_SECTIONS)
    limit = FailureLimit.parse(opts.max_failed) if opts.max_failed is not None else None
    answer_set = opts.answer_set or answer_set_name(opts.answers)
    if not _SET_NAME.fullmatch(answer_set):
        raise UsageError(
            f"--answer_set {answer_set!r} must be letters, digits and _.- (e.g. claude-run2)"
        )
    if sinks.bigquery_dataset is not None:
        dataset_name(sinks.bigquery_dataset)
    run_dir = run.rstrip("/")
    check_literal(run_dir, "run")
    check_whole_run(run_dir, "run")
    _require_files(opts.answers, "--answers")
    rows_in_dataset = _audit_rows_in(run_dir, sinks.bigquery_dataset)
    if not prompt_line_globs(run_dir) and staged_prompt_glob(run_dir) is None:
        _require_files(f"{run_dir}/prompts/*.jsonl", "--run prompts")
    if opts.requests:
        _require_files(opts.requests, "--requests")
    output = (sinks.output or run_dir).rstrip("/")
    check_output(output)
    # e.g. an answer set's own dead letters given back as its answers
    check_inputs_outside(
        [opts.answers, opts.requests],
        [f"{output}/{name}/{answer_set}" for name in ("verifications", "verify_dead_letters")],
        "choose another --answer_set or --output",
    )
    return VerifySettings(
        answers=opts.answers,
        run=run_dir,
        requests=opts.requests or None,
        output=output,
        answer_set=answer_set,
        max_record_bytes=options.view_as(InputOptions).max_record_bytes,
        dataset=sinks.bigquery_dataset,
        limit=limit,
        overwrite=sinks.overwrite,
        checks=CheckSettings(opts.scope, opts.citation_span, bool(opts.gate_names)),
        rows_in_dataset=rows_in_dataset,
    )


def _audit_rows_in(run_dir: str, dataset: str | None) -> str | None:
    """None when the run's manifests are files in its folder; else the run's id, its rows
    read from `dataset` (a batch run with `--bigquery_dataset` writes its audit rows
    there and its prompts and run record to its folder)."""
    if matching_files(f"{run_dir}/manifests/*.parquet"):
        return None
    run_id = recorded_run_id(run_dir)
    if dataset is None or run_id is None:
        raise ValueError(
            f"--run manifests {run_dir + '/manifests/*.parquet'!r} match no file"
            + (
                f"; a run whose audit rows went to BigQuery is verified with its dataset: "
                f"add --bigquery_dataset (run {run_id})"
                if run_id
                else ""
            )
        )
    return run_id


@dataclass(frozen=True)
class VerifyStreamSettings:
    """Validated settings of one `evpack verify-stream` job."""

    answers: str
    prompts: str
    dataset: str
    prompt_ttl_seconds: int


def resolve_verify_stream(options: PipelineOptions) -> VerifyStreamSettings:
    """Check the flags of `evpack verify-stream`."""
    check_numbers(options, VERIFY_STREAM_SECTIONS)
    opts = options.view_as(VerifyStreamOptions)
    return VerifyStreamSettings(
        answers=resource_name(opts.answers_subscription, "answers_subscription", "subscriptions"),
        prompts=resource_name(opts.prompts_subscription, "prompts_subscription", "subscriptions"),
        dataset=dataset_name(options.view_as(SinkOptions).bigquery_dataset),
        prompt_ttl_seconds=opts.prompt_ttl_seconds,
    )
