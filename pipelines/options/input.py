"""The request files a batch job reads, and the limits on what it reads."""

import argparse
import os
from typing import get_args

from apache_beam.options.pipeline_options import PipelineOptions

from packer.parsing.names import DEFAULT_MAX_RECORD_BYTES, FileFormat, InputShape
from pipelines.command import UsageError
from pipelines.options.flags import GCS_FILE, POSITIVE_INT, Flag, Param, declare, require
from transforms.record_files import matching_files

_SUFFIXES: dict[str, FileFormat] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_COMPRESSION = (".gz", ".bz2", ".zst", ".deflate")

FILE_FORMATS = ("auto", *get_args(FileFormat))
FILE_FORMAT_LABELS = {
    "auto": "From the file extension",
    "jsonl": "JSON lines",
    "parquet": "Parquet",
}
"""The template's label of each of `FILE_FORMATS`."""

DEFAULT_MAX_DEAD_LETTER_PERCENT = 50.0
"""More dead letters than records packed: the input is not what the job reads, not a few
bad records."""


class InputOptions(PipelineOptions):
    """Requests to pack, and the limits on what is read."""

    FLAGS = (
        Flag(
            "input",
            "Requests to pack: a file or glob, local or gs:// (JSONL or Parquet).",
            template=Param("Request files", GCS_FILE),
        ),
        Flag(
            "input_format",
            "Format of --input; auto reads it from the file extension.",
            default="auto",
            choices=FILE_FORMATS,
            template=Param("Input format", choice_labels=FILE_FORMAT_LABELS),
        ),
        Flag(
            "input_shape",
            "nested: one request per record with a candidates list; flat: one "
            "candidate per record carrying the request fields, grouped by "
            "request_id; auto: decided per record (a candidates field means nested).",
            default="auto",
            choices=get_args(InputShape),
            template=Param(
                "Input shape",
                choice_labels={
                    "auto": "Decided per record",
                    "nested": "One request per record",
                    "flat": "One candidate per record",
                },
            ),
        ),
        Flag(
            "max_record_bytes",
            "Input records larger than this are dead-lettered unparsed.",
            default=DEFAULT_MAX_RECORD_BYTES,
            type=int,
            bound="positive",
            template=Param("Largest input record (bytes)", POSITIVE_INT),
        ),
    )

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        declare(parser, cls.FLAGS)


class GateOptions(PipelineOptions):
    """When a finished batch run still fails."""

    FLAGS = (
        Flag(
            "max_dead_letter_percent",
            "evpack batch exits 1 when more than this percent of the records read are "
            "dead letters (or when no prompt was made); 100 never.",
            default=DEFAULT_MAX_DEAD_LETTER_PERCENT,
            type=float,
            bound="not negative",
            template=Param(
                "Dead-letter limit (percent)", r"^(100(\.0{1,6})?|[0-9]{1,2}(\.[0-9]{1,6})?)$"
            ),
        ),
    )

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        declare(parser, cls.FLAGS)


def file_format(path: str, declared: str, flag: str) -> FileFormat:
    """The declared format, or the one the extension names (compression suffixes ignored)."""
    if declared != "auto":
        return declared  # type: ignore[return-value]
    name = path.lower()
    for suffix in _COMPRESSION:
        name = name.removesuffix(suffix)
    for suffix, fmt in _SUFFIXES.items():
        if name.endswith(suffix):
            return fmt
    raise ValueError(
        f"cannot tell the format of --{flag} {path!r} from its extension; "
        f"name files *.jsonl or *.parquet, or pass --{flag}_format=jsonl|parquet"
    )


def check_matches(pattern: str, flag: str) -> None:
    """Fail early when a local pattern matches nothing, or names a folder (remote patterns
    are checked by the read). A folder would be read file by file, scripts and answers
    included, and end as a run of dead letters."""
    if "://" in pattern:
        return
    if os.path.isdir(pattern):
        glob = f"{pattern.rstrip('/')}/*.jsonl"
        raise UsageError(
            f"--{flag} {pattern!r} is a folder; pass a glob of its record files, "
            f"e.g. --{flag}='{glob}'"
        )
    if not matching_files(pattern):
        raise UsageError(f"--{flag} {pattern!r} matches no file; check the path or glob")


def resolve_input(options: PipelineOptions) -> tuple[str, FileFormat]:
    """The request files (`--input`, which must match a file) and their format."""
    opts = options.view_as(InputOptions)
    pattern = require(opts.input, "input", "samples/requests.jsonl")
    check_matches(pattern, "input")
    return pattern, file_format(pattern, opts.input_format, "input")
