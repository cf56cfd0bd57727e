"""Options shared by every evpack pipeline, and their validation.

One `PipelineOptions` subclass holds the flags all pipelines share (Beam builds
one parser from every subclass, so a flag may be declared only once). `resolve`
checks them and returns plain settings; every error says how to fix it.
"""

import argparse
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import get_args

import yaml
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from pydantic import ValidationError

from schemas import PackingConfig
from schemas.config import PromptFormat
from transforms.parse import (
    DEFAULT_MAX_RECORD_BYTES,
    FileFormat,
    InputShape,
    describe_validation_error,
)

_SUFFIXES: dict[str, FileFormat] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_COMPRESSION = (".gz", ".bz2", ".zst", ".deflate")


class EvpackOptions(PipelineOptions):
    """Flags of the evidence packer, shared by the batch and streaming pipelines."""

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--input",
            help="Requests to pack: a file or glob, local or gs:// (JSONL or Parquet).",
        )
        parser.add_argument(
            "--input_format",
            default="auto",
            choices=["auto", "jsonl", "parquet"],
            help="Format of --input; auto reads it from the file extension.",
        )
        parser.add_argument(
            "--input_shape",
            default="auto",
            choices=["auto", "nested", "flat"],
            help=(
                "nested: one request per record with a candidates list; flat: one "
                "candidate per record carrying the request fields, grouped by "
                "request_id; auto: decided per record (a candidates field means nested)."
            ),
        )
        parser.add_argument(
            "--output",
            help="Directory or gs:// prefix for prompts, audit tables and dead letters.",
        )
        parser.add_argument(
            "--catalog",
            help="The document catalog: a JSONL or Parquet file or glob, local or gs://.",
        )
        parser.add_argument(
            "--catalog_format",
            default="auto",
            choices=["auto", "jsonl", "parquet"],
            help="Format of --catalog; auto reads it from the file extension.",
        )
        parser.add_argument(
            "--config",
            help="Packing config as YAML or JSON; omitted settings take their defaults.",
        )
        parser.add_argument(
            "--event_time",
            help=(
                "ISO-8601 time used as event time of requests that carry neither "
                "event_time nor as_of (default: the run's start). Set it to rerun "
                "a job byte for byte."
            ),
        )
        parser.add_argument(
            "--prompt_format",
            choices=get_args(PromptFormat),
            help=(
                "Shape of each prompt line: our messages JSON, or the input line of the "
                "OpenAI Batch, Anthropic Message Batches or Vertex AI batch prediction API "
                "(default: the config's prompt_format, messages). Part of config_hash."
            ),
        )
        parser.add_argument(
            "--overwrite",
            action="store_true",
            help="Replace the files of an earlier run under --output (default: refuse).",
        )
        parser.add_argument(
            "--max_record_bytes",
            type=int,
            default=DEFAULT_MAX_RECORD_BYTES,
            help="Input records larger than this are dead-lettered unparsed.",
        )


def usage(prog: str, description: str) -> str:
    """Help text of the shared flags (Beam's own parser would only print -h)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=description,
        epilog="Standard Beam options (--runner, --direct_num_workers, ...) pass through.",
    )
    EvpackOptions._add_argparse_args(parser)
    return parser.format_help()


@dataclass(frozen=True)
class Settings:
    """Validated settings of one run."""

    input: str | None
    input_format: FileFormat | None
    input_shape: InputShape
    output: str
    catalog: str
    catalog_format: FileFormat
    config: PackingConfig
    event_time: datetime
    max_record_bytes: int


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


def load_config(path: str | None, prompt_format: str | None = None) -> PackingConfig:
    """The packing config from a YAML or JSON file (JSON is YAML); None means defaults.

    `prompt_format` (the flag) overrides the config's, so `config_hash` names it.
    """
    config = _read_config(path)
    if prompt_format is None or prompt_format == config.prompt_format:
        return config
    return PackingConfig.model_validate({**config.model_dump(), "prompt_format": prompt_format})


def _read_config(path: str | None) -> PackingConfig:
    if path is None:
        return PackingConfig()
    try:
        with FileSystems.open(path) as handle:
            data = yaml.safe_load(handle.read().decode("utf-8"))
    except OSError as err:
        raise ValueError(f"--config {path!r} cannot be read: {err}") from err
    except yaml.YAMLError as err:
        raise ValueError(f"--config {path!r} is not valid YAML or JSON: {err}") from err
    if data is None:
        return PackingConfig()
    if not isinstance(data, dict):
        raise ValueError(f"--config {path!r} must hold a mapping of settings, not {data!r}")
    try:
        return PackingConfig.model_validate(data)
    except ValidationError as err:
        raise ValueError(f"--config {path!r}: {describe_validation_error(err)}") from err


def parse_event_time(value: str | None) -> datetime:
    """The given ISO-8601 time in UTC, or now."""
    if value is None:
        return datetime.now(UTC)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as err:
        raise ValueError(
            f"--event_time {value!r} is not ISO-8601; write e.g. 2026-01-31T12:00:00Z"
        ) from err
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _require(value: str | None, flag: str, example: str) -> str:
    if not value:
        raise ValueError(f"--{flag} is required, e.g. --{flag}={example}")
    return value


def _matches(pattern: str, flag: str) -> None:
    """Fail early when a local pattern matches nothing (remote ones are checked by the read)."""
    if "://" in pattern:
        return
    found = FileSystems.match([pattern])[0].metadata_list
    if not found:
        raise ValueError(f"--{flag} {pattern!r} matches no file; check the path or glob")


def resolve(options: PipelineOptions, *, needs_input: bool = True) -> Settings:
    """Check the shared flags and return the settings of this run."""
    opts = options.view_as(EvpackOptions)
    input_path = opts.input
    input_format: FileFormat | None = None
    if needs_input:
        input_path = _require(input_path, "input", "samples/requests.jsonl")
        _matches(input_path, "input")
        input_format = file_format(input_path, opts.input_format, "input")
    catalog = _require(opts.catalog, "catalog", "samples/catalog.jsonl")
    _matches(catalog, "catalog")
    output = _require(opts.output, "output", "out/run1").rstrip("/")
    if opts.max_record_bytes <= 0:
        raise ValueError(f"--max_record_bytes must be positive, got {opts.max_record_bytes}")
    return Settings(
        input=input_path,
        input_format=input_format,
        input_shape=opts.input_shape,
        output=output,
        catalog=catalog,
        catalog_format=file_format(catalog, opts.catalog_format, "catalog"),
        config=load_config(opts.config, opts.prompt_format),
        event_time=parse_event_time(opts.event_time),
        max_record_bytes=opts.max_record_bytes,
    )


def settings_summary(settings: Settings) -> str:
    """The settings as one JSON line, logged at start so a run can be reproduced."""
    return json.dumps(
        {
            "input": settings.input,
            "input_format": settings.input_format,
            "input_shape": settings.input_shape,
            "output": settings.output,
            "catalog": settings.catalog,
            "config_hash": settings.config.config_hash(),
            "event_time": settings.event_time.isoformat(),
        },
        sort_keys=True,
    )


_DIRECT_NAMES = {None, "DirectRunner", "SwitchingDirectRunner"}
"""Runner names that would make Beam try to download the Prism runner first."""


def pin_local_runner(options: PipelineOptions, local_runner: str) -> None:
    """Replace the Prism-first DirectRunner by an in-process runner; others stay."""
    standard = options.view_as(StandardOptions)
    if standard.runner in _DIRECT_NAMES:
        standard.runner = local_runner
