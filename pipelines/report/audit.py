"""Reading a run's audit files into DuckDB, one table per audit table, and its views.

A run read is an `AuditRun`: its tables, and what they do not hold (run records,
prompt format, answer sets); `dataset` reads runs from BigQuery into the same.

A table the run did not write (e.g. no dead letters) is read as empty, with
its schema derived from `schemas/`; files are read through Beam's
filesystems, local or `gs://`. A batch run's outputs are read as its run
record lists them (`transforms.run_folder`): a folder whose record lists a file
that is gone, or whose first commit was cut off half way, is refused rather
than drawn as a run; a folder without a record (streaming, or older runs) is
read as it is.
"""

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from apache_beam.io.filesystem import BeamIOError, CompressionTypes, FileMetadata
from apache_beam.io.filesystems import FileSystems
from pydantic import BaseModel

from packer.verification.answers import AnswerError, parse_prompt_line
from pipelines.command import UsageError
from pipelines.options.sinks import check_literal
from pipelines.options.stored_run import check_whole_run
from pipelines.views import View
from schemas.arrow import arrow_schema
from schemas.run import RunRecord
from schemas.tables import AUDIT_TABLES, BATCH_FILE_TYPES
from transforms.record_files import matchable, matching_files, read_parquet
from transforms.run_folder import recorded_files

AUDIT_MODELS: dict[str, type[BaseModel]] = {name: t.model for name, t in AUDIT_TABLES.items()}
"""Audit tables as the file sinks name them (`schemas.tables`), with the model of their
rows (`verifications` is written by `evpack verify`)."""

SCHEMA = "audit"


@dataclass(frozen=True)
class ViewResult:
    """One view's result: its columns and rows, ordered for reading."""

    view: View
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


@dataclass(frozen=True)
class AuditRun:
    """One run as its page reads it: its audit tables in DuckDB, and what they do not hold."""

    where: str
    """Where the run was read: its folder, or the dataset and its run id."""
    run_id: str | None
    """Its run id (`schemas.run.new_run_id`); None for a folder without a run record."""
    con: duckdb.DuckDBPyConnection
    records: tuple[RunRecord, ...]
    """Its run records (a batch run writes one; streaming and older runs none)."""
    prompt_format: str | None
    answer_set: str | None
    """The answer set its page shows (`chosen_answer_set`); None when it has none."""
    answer_sets: tuple[str, ...]
    """Every answer set verified against it."""
    folder: str | None
    """Its folder (`evpack verify --run` takes it); None for a run read from BigQuery."""
    verification_rows: str
    """Its verification rows as a query names them (the page's gate example)."""


def folder_run(audit_dir: str, answer_set: str | None, strict: bool = True) -> AuditRun:
    """The run of one folder, showing `answer_set` (`chosen_answer_set`)."""
    chosen = chosen_answer_set(audit_dir, answer_set, strict)
    records = tuple(run_records(audit_dir))
    return AuditRun(
        where=audit_dir,
        run_id=records[-1].run_id if records else None,
        con=open_audit(audit_dir, chosen),
        records=records,
        prompt_format=record_formats(records) or prompt_format(audit_dir),
        answer_set=chosen,
        answer_sets=tuple(sorted(answer_sets(audit_dir))),
        folder=audit_dir,
        verification_rows=f"'{audit_dir}/verifications/**/*.parquet'",
    )


def listing(audit_dir: str, pattern: str) -> list[FileMetadata]:
    """The files under `audit_dir` matching `pattern` (relative to it), with their metadata;
    a folder that cannot be listed (a bucket that does not exist) is one line, exit 2."""
    try:
        return FileSystems.match([matchable(f"{audit_dir}/{pattern}")])[0].metadata_list
    except BeamIOError as err:
        raise UsageError(f"--audit {audit_dir} cannot be listed: {err}") from err


def answer_sets(audit_dir: str) -> dict[str, float]:
    """The answer sets verified against the run (`verifications/<set>/`, one per
    `evpack verify --answer_set`), each with when its newest file was written."""
    prefix = f"{audit_dir}/verifications/"
    sets: dict[str, float] = {}
    for meta in listing(audit_dir, "verifications/*/*"):
        name = meta.path[len(prefix) :].split("/", 1)[0]
        sets[name] = max(sets.get(name, 0.0), meta.last_updated_in_seconds)
    return sets


def chosen_answer_set(audit_dir: str, wanted: str | None, strict: bool = True) -> str | None:
    """The answer set the page shows: `wanted` (`--answer_set`), else the newest one; None
    when the run has none (or verification files from before answer sets). Sets are never
    summed: three verify runs of one request are three answers, not one request's. A run
    without `wanted` is refused (`strict`), or shows no answers (one run of a folder)."""
    sets = answer_sets(audit_dir)
    if wanted is not None and wanted not in sets and strict:
        names = ", ".join(sorted(sets)) or "none"
        raise UsageError(
            f"--answer_set {wanted!r} is not among the answer sets of {audit_dir}: {names}"
        )
    return pick_answer_set(sets, wanted)


def pick_answer_set(sets: Mapping[str, Any], wanted: str | None) -> str | None:
    """Of a run's answer sets (each with when its newest answer was verified), `wanted`
    when the run has it, else none; with nothing wanted, the newest."""
    if wanted is not None:
        return wanted if wanted in sets else None
    return max(sets, key=lambda s: (sets[s], s)) if sets else None


def record_formats(records: Sequence[RunRecord]) -> str:
    """The prompt formats the run records name, joined ("" for a run without records)."""
    return ", ".join(sorted({r.prompt_format for r in records}))


def table_files(audit_dir: str, table: str, answer_set: str | None = None) -> list[str]:
    """The files of one audit table: `<dir>/<table>/**/*.parquet` or `*.jsonl` (dead letters);
    of an output the run record lists, only the files it lists; of `verifications`, those
    of `answer_set` when one is named."""
    where = f"{table}/{answer_set}" if table == "verifications" and answer_set else table
    found = matching_files(f"{audit_dir}/{where}/**")
    listed = recorded_files(audit_dir) if table in BATCH_FILE_TYPES else None
    return [
        f
        for f in found
        if f.endswith((".parquet", ".jsonl")) and (listed is None or f in set(listed))
    ]


def _read_bytes(path: str) -> bytes:
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        return handle.read()


def _json_lines(path: str) -> list[str]:
    """The lines of a JSONL file, split at `\\n` only: `str.splitlines` also splits at
    U+0085, U+2028 and other breaks that JSON writes unescaped inside a string (a dead
    letter's payload or source holds anyone's text)."""
    return [line for line in _read_bytes(path).decode("utf-8").split("\n") if line.strip()]


def read_table(path: str, model: type[BaseModel]) -> pa.Table:
    """One audit file as Arrow rows of `model`'s derived schema (JSONL is validated first)."""
    schema = arrow_schema(model)
    if path.endswith(".parquet"):
        return read_parquet(path, schema=schema)
    records = [model.model_validate_json(line).model_dump() for line in _json_lines(path)]
    return pa.Table.from_pylist(records, schema=schema)


def open_audit(audit_dir: str | Path, answer_set: str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with one table per audit table of `audit_dir` (UTC session), the
    verifications of `answer_set` alone when one is named (`chosen_answer_set`)."""
    audit = str(audit_dir).rstrip("/")
    check_literal(audit, "audit")
    if FileSystems.get_scheme(audit) is None and not Path(audit).is_dir():
        raise ValueError(f"--audit {audit} is not a directory; pass the run's output directory")
    check_whole_run(audit, "audit")
    tables = {}
    for table, model in AUDIT_MODELS.items():
        try:
            files = table_files(audit, table, answer_set)
        except BeamIOError as err:  # e.g. a bucket that does not exist
            raise UsageError(f"--audit {audit} cannot be listed: {err}") from err
        if files:
            tables[table] = pa.concat_tables([read_table(f, model) for f in files])
    if not tables:
        raise ValueError(
            f"no audit files under {audit} (expected e.g. {audit}/manifests/*.parquet)"
        )
    return audit_connection(tables)


def audit_connection(tables: dict[str, pa.Table]) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB (UTC session) with one table per audit table: the rows of
    `tables`, each in its model's derived schema; a table not among them is empty."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"CREATE SCHEMA {SCHEMA}")
    for table, model in AUDIT_MODELS.items():
        con.register("_rows", tables.get(table, arrow_schema(model).empty_table()))
        con.execute(f"CREATE TABLE {SCHEMA}.{table} AS SELECT * FROM _rows")
        con.unregister("_rows")
    return con


def prompt_format(audit_dir: str) -> str | None:
    """The format of the run's prompt lines, as its first line reads
    (`packer.verification.answers`), for a run without a run record (None: no prompts)."""
    for path in matching_files(f"{audit_dir}/prompts/*.jsonl"):
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
            for line in iter(handle.readline, b""):  # a shard can be large: its first line
                if line.strip():
                    try:
                        return parse_prompt_line(line.decode("utf-8")).prompt_format
                    except (AnswerError, UnicodeDecodeError):
                        return "unknown"
    return None


def run_records(audit_dir: str) -> list[RunRecord]:
    """The run records of `runs/` (a batch run writes one; older runs and streaming none)."""
    return [
        RunRecord.model_validate_json(line)
        for path in table_files(audit_dir, "runs")
        for line in _json_lines(path)
    ]


def run_views(con: duckdb.DuckDBPyConnection, views: Sequence[View]) -> list[ViewResult]:
    """Each view's rows, sorted by every column so the page is deterministic."""
    figures = []
    for view in views:
        result = con.execute(f"SELECT * FROM ({view.duckdb_sql(SCHEMA)}) ORDER BY ALL")
        columns = tuple(d[0] for d in result.description)
        figures.append(ViewResult(view, columns, tuple(result.fetchall())))
    return figures


def query(
    con: duckdb.DuckDBPyConnection, sql: str, *params: Any
) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    result = con.execute(sql.replace("{s}", SCHEMA), list(params))
    return tuple(d[0] for d in result.description), result.fetchall()


STREAM_ROWS = 10_000
"""Rows fetched at a time by `streamed`."""


def streamed(
    con: duckdb.DuckDBPyConnection, sql: str
) -> tuple[tuple[str, ...], Iterator[tuple[Any, ...]]]:
    """As `query`, the rows fetched `STREAM_ROWS` at a time as they are read (on a cursor
    of its own, so other queries may run meanwhile)."""
    result = con.cursor().execute(sql.replace("{s}", SCHEMA))

    def rows() -> Iterator[tuple[Any, ...]]:
        while batch := result.fetchmany(STREAM_ROWS):
            yield from batch

    return tuple(d[0] for d in result.description), rows()


def totals(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Row counts of the audit tables: the run at a glance."""
    return {
        table: con.execute(f"SELECT COUNT(*) FROM {SCHEMA}.{table}").fetchone()[0]
        for table in AUDIT_MODELS
    }
