"""Audit rows to BigQuery: table creation from the schemas, and a streaming-insert sink.

Beam's `WriteToBigQuery` cannot be pointed at an emulator without patching Beam
(it hard-codes the API URL), and its load-job and Storage Write methods need GCS
or a Java expansion service. This sink calls google-cloud-bigquery's
`insert_rows_json` in batches instead, so the same code runs against the local
emulator (`BIGQUERY_EMULATOR_HOST`) and real BigQuery.

Errors are classified: a transient one (5xx, 408, 429, connection) is raised so
the runner retries the bundle; a permanent one never is (streaming Dataflow
retries a failing bundle forever), its rows go to dead letters instead.
"""

import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import apache_beam as beam
from apache_beam.io.gcp.bigquery import BigQueryDisposition, WriteToBigQuery
from apache_beam.transforms.window import GlobalWindow, GlobalWindows
from apache_beam.utils.timestamp import Timestamp
from apache_beam.utils.windowed_value import WindowedValue
from google.api_core import exceptions as api_exceptions
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import bigquery
from pydantic import BaseModel

from packer import BUILDER_VERSION
from schemas import DeadLetter
from schemas.bigquery import SchemaDrift, bigquery_schema, schema_drift
from schemas.tables import AUDIT_TABLES, OUTPUTS, Output
from transforms.io.base import RowId, Written

_LOG = logging.getLogger(__name__)

EMULATOR_ENV = "BIGQUERY_EMULATOR_HOST"
DEAD_LETTER_STAGE = "bigquery_insert"

TRANSIENT_ERRORS: tuple[type[Exception], ...] = (
    api_exceptions.InternalServerError,
    api_exceptions.BadGateway,
    api_exceptions.ServiceUnavailable,
    api_exceptions.GatewayTimeout,
    api_exceptions.TooManyRequests,
    ConnectionError,
    TimeoutError,
)
"""Whole-request failures worth retrying (plus HTTP 408); anything else is permanent."""

REQUEST_BYTES = 5_000_000
"""Rows per insert request stop at this many JSON bytes: insertAll takes 10 MB a request."""

TRANSIENT_ROW_REASONS = frozenset({"backendError", "internalError", "rateLimitExceeded", "timeout"})
"""Per-row error reasons worth retrying. `stopped` rows were fine but rejected
with a faulty neighbour, so they are retried too."""


def bigquery_client(project: str | None) -> bigquery.Client:
    """A client for real BigQuery, or for the emulator when `BIGQUERY_EMULATOR_HOST` is set.

    The emulator accepts anonymous calls; real BigQuery uses application default
    credentials.
    """
    emulator = os.environ.get(EMULATOR_ENV)
    if emulator:
        return bigquery.Client(
            project=project,
            credentials=AnonymousCredentials(),
            client_options=ClientOptions(api_endpoint=emulator),
        )
    return bigquery.Client(project=project)


def table_definition(table_id: str, table: Output) -> bigquery.Table:
    """The table derived from its model: partitioned by event date, clustered by tenant."""
    schema = [bigquery.SchemaField.from_api_repr(f) for f in bigquery_schema(table.model)]
    definition = bigquery.Table(table_id, schema=schema)
    definition.time_partitioning = bigquery.TimePartitioning(
        type_=bigquery.TimePartitioningType.DAY, field=table.partition_field
    )
    definition.clustering_fields = list(table.cluster_fields)
    return definition


def create_tables(
    client: bigquery.Client,
    dataset: str,
    tables: Iterable[Output] = AUDIT_TABLES.values(),
    location: str | None = None,
) -> dict[str, SchemaDrift]:
    """Create the dataset and the audit tables if missing, and bring an existing table's
    schema up to this version's (`update_schema`); returns each table id with its drift.

    `dataset` is `project.dataset` or a dataset id in the client's project;
    `location` (e.g. "EU") applies only when the dataset is created.
    Idempotent, so deploys and the job itself may both call it.
    """
    definition = bigquery.Dataset(dataset if "." in dataset else f"{client.project}.{dataset}")
    if location:
        definition.location = location
    ds = client.create_dataset(definition, exists_ok=True)
    ready = {}
    for table in tables:
        table_id = f"{ds.project}.{ds.dataset_id}.{table.name}"
        current = client.create_table(table_definition(table_id, table), exists_ok=True)
        ready[table_id] = update_schema(client, current, table)  # the table as it now stands
    return ready


class TableMismatch(ValueError):
    """An existing table holds a column this version writes in another type or shape."""


def update_schema(client: bigquery.Client, current: bigquery.Table, table: Output) -> SchemaDrift:
    """Add the columns this version writes that the table `current` (as read or created)
    lacks, relax the REQUIRED ones it may leave empty (both in place, as BigQuery allows);
    raise `TableMismatch` naming each column no in-place change mends. A table written by
    an older version would otherwise refuse every row of this one."""
    table_id = str(current.reference)
    existing = [f.to_api_repr() for f in current.schema]
    drift = schema_drift(existing, bigquery_schema(table.model))
    if drift.conflicts:
        raise TableMismatch(
            f"table {table_id} cannot take this version's rows: {'; '.join(drift.conflicts)} "
            "(BigQuery changes no column's type in place: name a new dataset, or migrate it)"
        )
    if drift.changed:
        current.schema = [bigquery.SchemaField.from_api_repr(f) for f in drift.schema]
        client.update_table(current, ["schema"])
        _LOG.info("table %s: %s", table_id, describe_drift(drift))
    return drift


def describe_drift(drift: SchemaDrift) -> str:
    """What `update_schema` changed, in one line."""
    parts = [
        f"{what} {', '.join(columns)}"
        for what, columns in (("added", drift.added), ("relaxed to NULLABLE", drift.relaxed))
        if columns
    ]
    return "; ".join(parts)


def create_audit_tables(dataset: str | None, names: Iterable[str] | None = None) -> None:
    """Create `dataset` (<project>.<dataset>) and the named audit tables (default: all) if
    missing, with a client of the dataset's project; nothing when no dataset is named."""
    if dataset is None:
        return
    tables = AUDIT_TABLES.values() if names is None else [AUDIT_TABLES[name] for name in names]
    ready = create_tables(bigquery_client(dataset.split(".")[0]), dataset, tables)
    _LOG.info("audit tables ready in %s: %s", dataset, ", ".join(ready))


@dataclass(frozen=True)
class RecentRequestIds:
    """The request_ids of the manifests in `table_id` whose event time is within `seconds`.

    A restarted stream starts its dedupe memory with them (see
    `transforms.stream_parse`): the manifests are the record of what was packed.
    A table dropped while the job runs remembers nothing, said in one warning naming
    it: the runner sets a packing worker up again at any time, and a `NotFound` there
    failed the whole job with a traceback, while its inserts into the missing table
    are dead letters each naming it (`_InsertRowsFn`).
    """

    table_id: str
    seconds: int

    def __call__(self) -> frozenset[str]:
        client = bigquery_client(self.table_id.split(".")[0])
        sql = (
            f"SELECT DISTINCT request_id FROM `{self.table_id}` WHERE event_time >= "
            f"TIMESTAMP_SUB(CURRENT_TIMESTAMP(), INTERVAL {int(self.seconds)} SECOND)"
        )
        try:
            return frozenset(row["request_id"] for row in client.query(sql).result())
        except api_exceptions.NotFound:
            _LOG.warning(
                "table %s is gone (dropped while the job ran): no request id is remembered "
                "from it, and rows for it are dead letters; recreate it with `evpack tables`",
                self.table_id,
            )
            return frozenset()
        finally:
            client.close()


def to_bigquery_row(record: BaseModel) -> dict[str, Any]:
    """The JSON row of a schema record (timestamps as RFC 3339, enums as strings)."""
    return record.model_dump(mode="json")


def is_transient(error: Exception) -> bool:
    """Whether a failed insert request should be retried rather than dead-lettered."""
    if isinstance(error, api_exceptions.GoogleAPICallError) and error.code == 408:
        return True
    return isinstance(error, TRANSIENT_ERRORS)


def _row_is_transient(errors: Sequence[dict[str, Any]]) -> bool:
    reasons = {e.get("reason") for e in errors}
    return reasons <= TRANSIENT_ROW_REASONS | {"stopped"}


def _dead_letter(table_id: str, row: dict[str, Any], error: str) -> DeadLetter:
    return DeadLetter(
        stage=DEAD_LETTER_STAGE,
        error=error,
        payload=json.dumps(row, sort_keys=True),
        source=table_id,
        request_id=row.get("request_id"),
        builder_version=BUILDER_VERSION,
    )


class _InsertRowsFn(beam.DoFn):
    """Buffers rows per bundle and streams them with `insert_rows_json`.

    Emits a `DeadLetter` per row that failed permanently; raises on transient
    failures that outlast `max_attempts`, so the runner retries the bundle.
    """

    def __init__(
        self,
        table_id: str,
        row_id: Callable[[dict[str, Any]], str] | None,
        batch_size: int,
        max_attempts: int,
    ) -> None:
        self._table_id = table_id
        self._row_id = row_id
        self._batch_size = batch_size
        self._max_attempts = max_attempts
        self._written = beam.metrics.Metrics.counter("bigquery", f"rows_written_{table_id}")
        self._failed = beam.metrics.Metrics.counter("bigquery", f"rows_dead_letter_{table_id}")

    def setup(self) -> None:
        project = self._table_id.split(".")[0] if self._table_id.count(".") == 2 else None
        self._client = bigquery_client(project)

    def start_bundle(self) -> None:
        self._rows: list[dict[str, Any]] = []
        self._bytes = 0

    def process(self, record: BaseModel) -> Iterator[DeadLetter]:
        row = to_bigquery_row(record)
        self._rows.append(row)
        self._bytes += len(json.dumps(row))
        if len(self._rows) >= self._batch_size or self._bytes >= REQUEST_BYTES:
            yield from self._flush()

    def finish_bundle(self) -> Iterator[WindowedValue]:
        for letter in self._flush():
            yield WindowedValue(letter, Timestamp.now(), [GlobalWindow()])

    def teardown(self) -> None:
        client = getattr(self, "_client", None)
        if client is not None:
            client.close()

    def _flush(self) -> Iterator[DeadLetter]:
        pending, self._rows, self._bytes = self._rows, [], 0
        for attempt in range(1, self._max_attempts + 1):
            if not pending:
                return
            pending, letters = self._insert(pending)
            yield from letters
            if pending and attempt < self._max_attempts:
                time.sleep(min(2.0**attempt, 30.0))
        if pending:
            raise RuntimeError(
                f"{len(pending)} rows to {self._table_id} still failing after "
                f"{self._max_attempts} attempts; the bundle will be retried"
            )

    def _insert(self, rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[DeadLetter]]:
        """Insert once; returns the rows to retry and the dead letters."""
        row_ids = (
            [self._row_id(r) for r in rows] if self._row_id else bigquery.AutoRowIDs.GENERATE_UUID
        )
        try:
            errors = self._client.insert_rows_json(self._table_id, rows, row_ids=row_ids)
        except Exception as error:
            if is_transient(error):
                return rows, []
            self._failed.inc(len(rows))
            return [], [_dead_letter(self._table_id, r, repr(error)) for r in rows]
        failed = {e["index"]: e["errors"] for e in errors}
        retry = [r for i, r in enumerate(rows) if i in failed and _row_is_transient(failed[i])]
        letters = [
            _dead_letter(self._table_id, r, json.dumps(failed[i]))
            for i, r in enumerate(rows)
            if i in failed and not _row_is_transient(failed[i])
        ]
        self._written.inc(len(rows) - len(failed))
        self._failed.inc(len(letters))
        return retry, letters


class WriteToBigQueryRows(beam.PTransform):
    """Write schema records as rows of an existing table; outputs the dead letters.

    The dead letters are in the global window whatever the input's windowing,
    so they flatten with the other dead letters of a pipeline.

    `row_id` gives each row an insertId so real BigQuery drops retried inserts
    (best effort; the emulator ignores it). Leave it unset for rows that are
    legitimately repeated, e.g. late panes of a windowed count.
    """

    def __init__(
        self,
        table_id: str,
        row_id: Callable[[dict[str, Any]], str] | None = None,
        batch_size: int = 500,
        max_attempts: int = 5,
    ) -> None:
        super().__init__()
        if table_id.count(".") != 2:
            raise ValueError(f"table_id must be project.dataset.table, got {table_id!r}")
        if not 1 <= batch_size <= 10_000:
            raise ValueError(
                f"batch_size must be within 1..10000 (insertAll limit), got {batch_size}"
            )
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
        self._fn = _InsertRowsFn(table_id, row_id, batch_size, max_attempts)

    def expand(self, records: beam.PCollection) -> beam.PCollection:
        return (
            records
            | "Insert" >> beam.ParDo(self._fn).with_output_types(DeadLetter)
            | "GlobalWindow" >> beam.WindowInto(GlobalWindows())
        )


class LoadJobRows:
    """Audit rows as BigQuery load jobs (batch on Dataflow); a failed load fails the job.

    `prefix` is put before each table's name (a batch run's staging tables,
    `transforms.io.table_commit`)."""

    def __init__(self, dataset: str, prefix: str = "") -> None:
        self._dataset = dataset
        self._prefix = prefix

    def write(self, rows: beam.PCollection, name: str, row_id: RowId | None) -> Written:
        _ = (
            rows
            | "ToRow" >> beam.Map(to_bigquery_row)
            | "Load"
            >> WriteToBigQuery(
                f"{self._dataset}.{self._prefix}{name}".replace(".", ":", 1),
                schema={"fields": bigquery_schema(OUTPUTS[name].model)},
                method=WriteToBigQuery.Method.FILE_LOADS,
                create_disposition=BigQueryDisposition.CREATE_NEVER,
                write_disposition=BigQueryDisposition.WRITE_APPEND,
            )
        )
        return Written()


class InsertRows:
    """Audit rows as BigQuery streaming inserts; the rows refused come back as dead letters.

    `prefix` as `LoadJobRows`'."""

    def __init__(self, dataset: str, prefix: str = "") -> None:
        self._dataset = dataset
        self._prefix = prefix

    def write(self, rows: beam.PCollection, name: str, row_id: RowId | None) -> Written:
        table_id = f"{self._dataset}.{self._prefix}{name}"
        return Written(refused=rows | "Insert" >> WriteToBigQueryRows(table_id, row_id=row_id))
