"""A run's audit rows read back from BigQuery, by run id: for the report over a dataset and
for `evpack verify` of a run whose audit rows went to BigQuery.

Every audit row carries the id of the run that wrote it (`schemas.run.new_run_id`),
so a run's rows are `WHERE run_id IN (...)`. The ids go into the SQL only after
the check every run id passes (`RUN_ID`): no user string reaches it. The columns
read are those the row's model has and the table holds (a table also written by a
newer version may have more; one by an older version, fewer), and every row is
validated by its model, as rows read from files are. Rejected: Beam's
`ReadFromBigQuery` (its export and Storage Read methods need Cloud Storage or the
Storage API, which the emulator has not; the same code must run against both).
"""

from collections.abc import Iterable, Iterator
from typing import Any

import apache_beam as beam
from google.api_core.exceptions import NotFound
from google.cloud import bigquery
from pydantic import BaseModel

from schemas.arrow import arrow_schema
from schemas.tables import AUDIT_TABLES
from transforms.io.bigquery import bigquery_client
from transforms.io.table_commit import RUN_ID


class InvalidAuditRow(ValueError):
    """A row in an audit table that its model refuses: not written by a job."""


def run_rows(
    client: bigquery.Client,
    dataset: str,
    table: str,
    run_ids: Iterable[str],
    timeout_seconds: float,
) -> Iterator[BaseModel]:
    """The rows of `dataset.table` written by (or, for verifications, checking) `run_ids`,
    each validated by the table's model; none when the table does not exist."""
    model = AUDIT_TABLES[table].model
    ids = sorted(set(run_ids))
    bad = [r for r in ids if not RUN_ID.match(r)]
    if bad:
        raise ValueError(f"not a run id: {bad[0]!r}")
    if not ids:
        return
    try:
        found = client.get_table(f"{dataset}.{table}", timeout=timeout_seconds)
    except NotFound:
        return
    held = {f.name for f in found.schema}
    columns = ", ".join(f"`{name}`" for name in arrow_schema(model).names if name in held)
    listed = ", ".join(f"'{r}'" for r in ids)
    sql = f"SELECT {columns} FROM `{dataset}.{table}` WHERE run_id IN ({listed})"
    rows = client.query(sql, timeout=timeout_seconds).result(timeout=timeout_seconds)
    for row in rows:
        try:
            yield model.model_validate(dict(row.items()))
        except ValueError as err:
            raise InvalidAuditRow(f"{dataset}.{table} holds a row no job wrote: {err}") from err


class _ReadRunRows(beam.DoFn):
    def __init__(self, dataset: str, table: str, run_id: str, timeout_seconds: float) -> None:
        self._dataset, self._table, self._run_id = dataset, table, run_id
        self._timeout = timeout_seconds

    def process(self, _: Any) -> Iterator[BaseModel]:
        client = bigquery_client(self._dataset.split(".")[0])
        try:
            yield from run_rows(client, self._dataset, self._table, [self._run_id], self._timeout)
        finally:
            client.close()


class ReadRunRows(beam.PTransform[beam.pvalue.PBegin, beam.PCollection[BaseModel]]):
    """One run's rows of an audit table in BigQuery, as its models, spread over the workers
    (a query's pages are read by one worker, then reshuffled)."""

    def __init__(self, dataset: str, table: str, run_id: str, timeout_seconds: float) -> None:
        super().__init__()
        self._fn = _ReadRunRows(dataset, table, run_id, timeout_seconds)
        self._model = AUDIT_TABLES[table].model

    def expand(self, begin: beam.pvalue.PBegin) -> beam.PCollection[BaseModel]:
        return (
            begin
            | "Query" >> beam.Create([None])
            | "Rows" >> beam.ParDo(self._fn).with_output_types(self._model)
            | "Spread" >> beam.Reshuffle()
        )
