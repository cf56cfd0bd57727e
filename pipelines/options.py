"""Options shared by every evpack pipeline, and their validation.

One `PipelineOptions` subclass holds the flags all pipelines share (Beam builds
one parser from every subclass, so a flag may be declared only once). `resolve`
checks them and returns plain settings; every error says how to fix it.
"""

import argparse
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, get_args

import yaml
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import (
    GoogleCloudOptions,
    PipelineOptions,
    StandardOptions,
)
from pydantic import TypeAdapter, ValidationError

from packer.tokens import TokenCounter, TokenizerError
from pipelines.command import UsageError
from schemas import PackingConfig
from schemas._types import UtcDatetime, describe_validation_error
from schemas.prompt_formats import FORMAT_NAMES, format_help
from schemas.tables import AUDIT_TABLES
from transforms.catalog.bigtable import CachedLookup
from transforms.catalog.bigtable_table import TableAddress
from transforms.catalog.factory import CATALOG_MODES, CatalogMode, CatalogSource
from transforms.catalog.side_input import catalog_documents, snapshot
from transforms.io.bigquery import bigquery_client, create_tables
from transforms.names import (
    DEFAULT_CATALOG_CACHE_ENTRIES,
    DEFAULT_CATALOG_REFRESH_SECONDS,
    DEFAULT_DEDUP_TTL_SECONDS,
    DEFAULT_MAX_RECORD_BYTES,
    DEFAULT_PROMPT_TTL_SECONDS,
    DEFAULT_WINDOW_SECONDS,
    FileFormat,
    InputShape,
)
from transforms.record_files import matchable, matching_files
from transforms.sinks import Sinks

_LOG = logging.getLogger(__name__)

_SUFFIXES: dict[str, FileFormat] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_COMPRESSION = (".gz", ".bz2", ".zst", ".deflate")

SIDE_INPUT_MAX_BYTES = 32 << 20
"""Above this size `auto` joins instead of broadcasting: measured with 2,000 requests
(benchmarks/scale.py), the side input is faster only for small catalogs, and its
memory grows with every document on every worker."""


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
            choices=["auto", *get_args(FileFormat)],
            help="Format of --input; auto reads it from the file extension.",
        )
        parser.add_argument(
            "--input_shape",
            default="auto",
            choices=get_args(InputShape),
            help=(
                "nested: one request per record with a candidates list; flat: one "
                "candidate per record carrying the request fields, grouped by "
                "request_id; auto: decided per record (a candidates field means nested)."
            ),
        )
        parser.add_argument(
            "--output",
            help=(
                "Directory or gs:// prefix for the outputs not sent elsewhere: prompts "
                "(unless --prompts_topic), audit tables and dead letters (unless "
                "--bigquery_dataset); streaming writes them once per --window_seconds."
            ),
        )
        parser.add_argument(
            "--prompts_topic", help="Generation topic, projects/<project>/topics/<name>."
        )
        parser.add_argument(
            "--bigquery_dataset",
            help="Audit dataset as <project>.<dataset>; tables manifests, exclusions, "
            "exclusion_counts, dead_letters.",
        )
        parser.add_argument(
            "--create_tables",
            default=True,
            type=parse_bool,
            help="Create the dataset and audit tables if missing at start (true/false).",
        )
        parser.add_argument(
            "--catalog",
            help="The document catalog: a JSONL or Parquet file or glob, local or gs://.",
        )
        parser.add_argument(
            "--catalog_format",
            default="auto",
            choices=["auto", *get_args(FileFormat)],
            help="Format of --catalog; auto reads it from the file extension.",
        )
        parser.add_argument(
            "--catalog_mode",
            default="auto",
            choices=["auto", *CATALOG_MODES],
            help=(
                "How requests meet the catalog. side_input: every worker holds the whole "
                "catalog (small catalogs; streaming re-reads it every "
                "--catalog_refresh_seconds); join: batch only, candidates joined to the "
                "catalog rows they reference; bigtable: keyed lookups in --bigtable_table "
                "with a per-worker cache. auto: bigtable when --bigtable_table is given, "
                f"else side_input for catalog files up to {SIDE_INPUT_MAX_BYTES >> 20} MiB "
                "(always in streaming), else join."
            ),
        )
        parser.add_argument(
            "--bigtable_project", help="Project of the Bigtable catalog (default: --project)."
        )
        parser.add_argument("--bigtable_instance", help="Bigtable instance of the catalog.")
        parser.add_argument(
            "--bigtable_table",
            help="Bigtable table of the catalog, written by `evpack catalog load`.",
        )
        parser.add_argument(
            "--catalog_refresh_seconds",
            type=float,
            default=DEFAULT_CATALOG_REFRESH_SECONDS,
            help=(
                "The revocation delay: a streaming job re-reads a side-input catalog this "
                "often, and a Bigtable lookup is cached this long."
            ),
        )
        parser.add_argument(
            "--catalog_cache_entries",
            type=int,
            default=DEFAULT_CATALOG_CACHE_ENTRIES,
            help="Bigtable mode: catalog entries each packing worker thread keeps cached.",
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
            choices=FORMAT_NAMES,
            help=(
                f"Shape of each prompt line ({format_help()}); default: the config's "
                "prompt_format, messages. Part of config_hash."
            ),
        )
        parser.add_argument(
            "--run",
            help="The --output of an earlier batch run, read by evpack verify and evpack replay.",
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
        parser.add_argument(
            "--max_dead_letter_percent",
            type=float,
            default=DEFAULT_MAX_DEAD_LETTER_PERCENT,
            help=(
                "evpack batch exits 1 when more than this percent of the records read are "
                "dead letters (or when no prompt was made); 100 never."
            ),
        )


def parse_bool(value: str) -> bool:
    """A true/false flag value (also 1/0, yes/no)."""
    lowered = value.lower()
    if lowered not in {"true", "false", "1", "0", "yes", "no"}:
        raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")
    return lowered in {"true", "1", "yes"}


def resource_name(value: str | None, flag: str, kind: str) -> str:
    """A Pub/Sub resource name, projects/<project>/<kind>/<name>; raises naming the flag."""
    if not value or not value.startswith("projects/") or f"/{kind}/" not in value:
        raise ValueError(f"--{flag} is required as projects/<project>/{kind}/<name>, got {value!r}")
    return value


def dataset_name(value: str | None, flag: str = "bigquery_dataset") -> str:
    """A BigQuery dataset, <project>.<dataset>; raises naming the flag."""
    if not value or value.count(".") != 1 or "" in value.split("."):
        raise ValueError(
            f"--{flag} must be <project>.<dataset>, got {value!r}; e.g. --{flag}=my-project.evpack"
        )
    return value


DEFAULT_MAX_DEAD_LETTER_PERCENT = 50.0
"""More dead letters than records packed: the input is not what the job reads, not a few
bad records."""


NUMBER_FLAGS: dict[str, tuple[Literal["positive", "not negative"], float]] = {
    "max_record_bytes": ("positive", DEFAULT_MAX_RECORD_BYTES),
    "max_dead_letter_percent": ("not negative", DEFAULT_MAX_DEAD_LETTER_PERCENT),
    "catalog_refresh_seconds": ("positive", DEFAULT_CATALOG_REFRESH_SECONDS),
    "catalog_cache_entries": ("positive", DEFAULT_CATALOG_CACHE_ENTRIES),
    "window_seconds": ("positive", DEFAULT_WINDOW_SECONDS),
    "allowed_lateness_seconds": ("not negative", 0),
    "dedup_ttl_seconds": ("positive", DEFAULT_DEDUP_TTL_SECONDS),
    "prompt_ttl_seconds": ("positive", DEFAULT_PROMPT_TTL_SECONDS),
}
"""Every numeric flag of every command: its bound, and its default as the value to suggest.

The one place these bounds live (`check_numbers` reads it): the transforms
taking such a value trust the command that resolved it. Rejected: argparse
`type=` checks, which Beam's lenient parser turns into a usage dump and an
exit instead of a message naming the flag."""


def check_numbers(**values: float) -> None:
    """Raise one ValueError naming each numeric flag out of its bound, and what to pass.

    Each command passes the numeric flags it reads: `check_numbers(window_seconds=60)`.
    """
    problems = []
    for flag, value in values.items():
        bound, default = NUMBER_FLAGS[flag]
        if value > 0 or (value == 0 and bound == "not negative"):
            continue
        rule = "must be positive" if bound == "positive" else "must be 0 or more"
        suggested = int(default) if float(default).is_integer() else default
        problems.append(f"--{flag} {rule}, got {value}; pass e.g. --{flag}={suggested}")
    if problems:
        raise ValueError("; ".join(problems))


def resolve_sinks(options: PipelineOptions, *, window_seconds: int | None = None) -> Sinks:
    """Where this run's outputs go (`transforms.sinks`); `window_seconds` in streaming."""
    opts = options.view_as(EvpackOptions)
    dataset, topic = opts.bigquery_dataset, opts.prompts_topic
    if dataset is not None:
        dataset_name(dataset)
    if topic is not None:
        resource_name(topic, "prompts_topic", "topics")
    output = opts.output.rstrip("/") if opts.output else None
    if output is not None:
        check_writable(output)
    if output is None and (dataset is None or topic is None):
        missing = "audit rows" if dataset is None else "prompts"
        raise ValueError(
            f"--output is required for the {missing} (or name --bigquery_dataset and "
            "--prompts_topic), e.g. --output=out/run1"
        )
    runner = options.view_as(StandardOptions).runner or ""
    loads = window_seconds is None and dataset is not None and runner.startswith("Dataflow")
    return Sinks(output, dataset, topic, load_jobs=loads, window_seconds=window_seconds)


def create_audit_tables(sinks: Sinks) -> None:
    """Create the BigQuery dataset and audit tables of `sinks`, if it names a dataset."""
    if sinks.dataset is None:
        return
    project = sinks.dataset.split(".")[0]
    tables = create_tables(bigquery_client(project), sinks.dataset, AUDIT_TABLES.values())
    _LOG.info("audit tables ready in %s: %s", sinks.dataset, ", ".join(tables))


@dataclass(frozen=True)
class Settings:
    """Validated settings of one run."""

    input: str | None
    input_format: FileFormat | None
    input_shape: InputShape
    output: str
    sinks: Sinks
    create_tables: bool
    catalog: CatalogSource
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
    try:  # the config's model may not fit the flag's format (`PromptFormat.models`)
        return PackingConfig.model_validate({**config.model_dump(), "prompt_format": prompt_format})
    except ValidationError as err:
        raise UsageError(
            f"--prompt_format {prompt_format}: {describe_validation_error(err)}"
        ) from err


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a mapping that names a key twice.

    PyYAML keeps the last copy without a word, so `input_limit` given twice
    would mean whichever came last; request records refuse the same
    (`transforms.strict_json`).
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        keys = [self.construct_object(key, deep=deep) for key, _ in node.value]
        twice = next((k for i, k in enumerate(keys) if k in keys[:i]), None)
        if twice is not None:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {twice!r} appears twice in one mapping", node.start_mark
            )
        return super().construct_mapping(node, deep=deep)


def _read_config(path: str | None) -> PackingConfig:
    if path is None:
        return PackingConfig()
    try:
        with FileSystems.open(path) as handle:
            data = yaml.load(handle.read().decode("utf-8"), Loader=_UniqueKeyLoader)
    except OSError as err:
        raise ValueError(f"--config {path!r} cannot be read: {err}") from err
    except UnicodeDecodeError as err:
        raise ValueError(f"--config {path!r} is not UTF-8 text: {err}") from err
    except RecursionError as err:
        raise ValueError(f"--config {path!r} nests too deep to be a config") from err
    except yaml.YAMLError as err:
        raise ValueError(f"--config {path!r} is not valid YAML or JSON: {err}") from err
    if data is None:
        return PackingConfig()
    if not isinstance(data, dict):
        raise ValueError(f"--config {path!r} must hold a mapping of settings, not {data!r}")
    try:
        config = PackingConfig.model_validate(data)
    except ValidationError as err:
        raise ValueError(f"--config {path!r}: {describe_validation_error(err)}") from err
    try:  # the workers load it too; a tokenizer that cannot load is a config error
        TokenCounter.load(config.tokenizer, config.tokenizer_file)
    except TokenizerError as err:
        raise ValueError(f"--config {path!r}: {err}") from err
    return config


_TIMESTAMP = TypeAdapter(UtcDatetime)


def parse_event_time(value: str | None) -> datetime:
    """The given ISO-8601 time in UTC, or now; read as a request's timestamps are."""
    if value is None:
        return datetime.now(UTC)
    try:
        return _TIMESTAMP.validate_python(value)
    except ValidationError as err:
        reason = err.errors(include_url=False)[0]["msg"]
        raise ValueError(
            f"--event_time {value!r} is not ISO-8601 in years 1..9999 ({reason}); "
            "write e.g. 2026-01-31T12:00:00Z"
        ) from err


def _require(value: str | None, flag: str, example: str) -> str:
    if not value:
        raise ValueError(f"--{flag} is required, e.g. --{flag}={example}")
    return value


def _matches(pattern: str, flag: str) -> None:
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


def check_writable(location: str, flag: str = "output") -> None:
    """Refuse before the run an output location that cannot be written: a file where the
    folder goes, a folder below a file, no write permission or a read-only filesystem.

    A probe file is written in the folder, or in its nearest existing ancestor, and
    removed at once: the one test that holds for every cause (`os.access` is not asked:
    as root it answers yes on /proc), and nothing is left behind. A `gs://` location
    is checked when the run takes its lock.
    """
    if "://" in location:
        return
    path = os.path.abspath(location)
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"--{flag} {location!r} is a file; name a folder for the outputs")
    existing = path
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as err:
        raise UsageError(
            f"--{flag} {location!r} cannot be written ({err.strerror or err}); "
            "choose a writable folder"
        ) from err


def _catalog_bytes(pattern: str) -> int | None:
    """The total size of the catalog files, or None when it cannot be told (no match)."""
    found = FileSystems.match([matchable(pattern)])[0].metadata_list
    return sum(m.size_in_bytes for m in found) if found else None


def choose_catalog_mode(
    declared: str, catalog_bytes: int | None, has_bigtable: bool, streaming: bool
) -> CatalogMode:
    """The catalog mode `auto` stands for (see --catalog_mode); a declared one stays."""
    if declared != "auto":
        return declared  # type: ignore[return-value]
    if has_bigtable:
        return "bigtable"
    if streaming or (catalog_bytes is not None and catalog_bytes <= SIDE_INPUT_MAX_BYTES):
        return "side_input"
    return "join"


def resolve_catalog(options: PipelineOptions, *, streaming: bool) -> CatalogSource:
    """Which catalog a run reads and how; every error names the flag to fix."""
    opts = options.view_as(EvpackOptions)
    address = (opts.bigtable_project, opts.bigtable_instance, opts.bigtable_table)
    has_bigtable = bool(opts.bigtable_table)
    if opts.catalog_mode == "auto" and has_bigtable and opts.catalog:
        raise ValueError(
            "pass --catalog (a file) or --bigtable_table, not both, or choose --catalog_mode"
        )
    check_numbers(
        catalog_refresh_seconds=opts.catalog_refresh_seconds,
        catalog_cache_entries=opts.catalog_cache_entries,
    )
    local = opts.catalog is not None and "://" not in opts.catalog
    size = _catalog_bytes(opts.catalog) if local else None  # type: ignore[arg-type]
    mode = choose_catalog_mode(opts.catalog_mode, size, has_bigtable, streaming)
    if mode == "join" and streaming:
        raise ValueError(
            "--catalog_mode=join is for batch; a streaming job uses side_input or bigtable"
        )
    if mode == "bigtable":
        project, instance, table_id = address
        project = project or options.view_as(GoogleCloudOptions).project
        if not (project and instance and table_id):
            raise ValueError(
                "--catalog_mode=bigtable needs --bigtable_instance, --bigtable_table and "
                "--bigtable_project (or --project)"
            )
        table = CachedLookup(
            TableAddress(project, instance, table_id),
            opts.catalog_refresh_seconds,
            opts.catalog_cache_entries,
        )
        return CatalogSource(mode, None, None, table, opts.catalog_refresh_seconds)
    pattern = _require(opts.catalog, "catalog", "samples/catalog.jsonl")
    _matches(pattern, "catalog")
    fmt = file_format(pattern, opts.catalog_format, "catalog")
    if mode == "side_input" and local:
        _check_catalog(pattern, fmt)
    return CatalogSource(mode, pattern, fmt, None, opts.catalog_refresh_seconds)


def _check_catalog(pattern: str, fmt: FileFormat) -> None:
    """Read a local side-input catalog once before the run: a bad row, or a document listed
    twice, is then a flag error naming the file rather than a failed run with a worker's
    traceback. It is small by definition (`SIDE_INPUT_MAX_BYTES`); a joined catalog is
    too large to read twice and is checked by the run."""
    snapshot(catalog_documents(pattern, fmt))  # its errors name the file (or the document)


def resolve(options: PipelineOptions, *, needs_input: bool = True) -> Settings:
    """Check the shared flags and return the settings of this run."""
    opts = options.view_as(EvpackOptions)
    input_path = opts.input
    input_format: FileFormat | None = None
    if needs_input:
        input_path = _require(input_path, "input", "samples/requests.jsonl")
        _matches(input_path, "input")
        input_format = file_format(input_path, opts.input_format, "input")
    sinks = resolve_sinks(options)
    output = _require(opts.output, "output", "out/run1").rstrip("/")
    check_numbers(max_record_bytes=opts.max_record_bytes)
    return Settings(
        input=input_path,
        input_format=input_format,
        input_shape=opts.input_shape,
        output=output,
        sinks=sinks,
        create_tables=opts.create_tables,
        catalog=resolve_catalog(options, streaming=False),
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
            "catalog": settings.catalog.pattern,
            "catalog_mode": settings.catalog.mode,
            "config_hash": settings.config.config_hash(),
            "event_time": settings.event_time.isoformat(),
        },
        sort_keys=True,
    )


_DIRECT_NAMES = {None, "DirectRunner", "SwitchingDirectRunner"}
"""Runner names that would make Beam try to download the Prism runner first."""


SUPPORTED_RUNNERS = frozenset(
    {"DirectRunner", "SwitchingDirectRunner", "FnApiRunner", "BundleBasedDirectRunner"}
    | {"DataflowRunner"}
)
"""Runners this project is tested on: Beam's in-process local runners (`FnApiRunner` for
batch, `BundleBasedDirectRunner` for streaming; `DirectRunner` is pinned to them) and
Dataflow (its job request is built in the tests). Rejected: passing others through.
Beam's Dask runner, tried, fails after writing nothing (`Delete operation failed`);
the Prism, Flink and Spark runners download or need a cluster and are not verified."""


def check_runner(options: PipelineOptions) -> None:
    """Refuse a runner this project does not support, naming the supported ones."""
    runner = options.view_as(StandardOptions).runner
    if runner is None:
        return
    name = runner if isinstance(runner, str) else type(runner).__name__
    if name.rsplit(".", 1)[-1] not in SUPPORTED_RUNNERS:
        raise UsageError(
            f"--runner={name} is not supported; use the default local runner (DirectRunner: "
            "FnApiRunner for batch, BundleBasedDirectRunner for streaming) or DataflowRunner"
        )


def pin_local_runner(options: PipelineOptions, local_runner: str) -> None:
    """Refuse an unsupported runner, then replace the Prism-first DirectRunner by an
    in-process runner; others stay."""
    check_runner(options)
    standard = options.view_as(StandardOptions)
    if standard.runner in _DIRECT_NAMES:
        standard.runner = local_runner
