"""Where each output goes: files under `--output`, BigQuery tables, or a Pub/Sub topic.

Sources and sinks are choices, not pipelines; both jobs read the same flags:
- audit rows (manifests, exclusions, counts, dead letters) go to BigQuery
  `<--bigquery_dataset>.<name>` when a dataset is named, else to files under
  `--output` (Parquet, JSONL for dead letters; in streaming, one set of files
  per `--window_seconds` window);
- prompts go to `--prompts_topic` when named, else to files under `--output`.

BigQuery: streaming inserts (`transforms.bigquery_io`) everywhere the
emulator may stand in, and batch load jobs (`WriteToBigQuery` with
`FILE_LOADS`, staged under `--temp_location`) on Dataflow, where loads are the
idiomatic, free and all-or-nothing path; a load that fails fails the job. A
row the insert sink refuses comes back as a dead letter, so nothing is lost.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import apache_beam as beam
from apache_beam.io.gcp.bigquery import BigQueryDisposition, WriteToBigQuery

from schemas import DeadLetter
from schemas.bigquery import bigquery_schema
from schemas.tables import OUTPUTS
from transforms.bigquery_io import WriteToBigQueryRows, to_bigquery_row
from transforms.files import WriteJsonl, WriteParquet


@dataclass(frozen=True)
class Sinks:
    """The sinks a run names; None means that output goes to files."""

    output: str | None
    dataset: str | None
    prompts_topic: str | None
    load_jobs: bool = False
    """Batch on Dataflow: BigQuery load jobs instead of streaming inserts."""
    window_seconds: int | None = None
    """Streaming: files are written once per window of this length."""


def manifest_row_id(row: dict) -> str:
    """insertId of a manifest row: one per request."""
    return row["request_id"]


def exclusion_row_id(row: dict) -> str:
    """insertId of an exclusion row: one per (request, candidate)."""
    return f"{row['request_id']}/{row['evidence_id']}"


class WriteFiles(beam.PTransform):
    """Rows of one named output as files under `output` (its file type from the table)."""

    def __init__(self, output: str, name: str, window_seconds: int | None = None) -> None:
        super().__init__()
        self._output = output
        self._name = name
        self._window = window_seconds

    def expand(self, rows: beam.PCollection) -> beam.pvalue.PDone:
        table = OUTPUTS[self._name]
        if table.file_type == "parquet":
            return rows | WriteParquet(self._output, self._name, table.model, self._window)
        return rows | WriteJsonl(self._output, self._name, self._window)


class WriteAuditRows(beam.PTransform):
    """Audit rows of one table to BigQuery or files; outputs the rows BigQuery refused."""

    def __init__(
        self,
        name: str,
        sinks: Sinks,
        row_id: Callable[[dict[str, Any]], str] | None = None,
    ) -> None:
        super().__init__()
        self._name = name
        self._sinks = sinks
        self._row_id = row_id
        self.written: beam.PCollection | None = None
        """Once applied with files as the sink: the files written (a job commits after them)."""

    def expand(self, rows: beam.PCollection) -> beam.PCollection[DeadLetter]:
        sinks = self._sinks
        if sinks.dataset is None:
            if sinks.output is None:
                raise ValueError(f"no sink for {self._name}: pass --output or --bigquery_dataset")
            self.written = rows | "Files" >> WriteFiles(
                sinks.output, self._name, sinks.window_seconds
            )
            return rows.pipeline | "NoneRefused" >> beam.Create([]).with_output_types(DeadLetter)
        table_id = f"{sinks.dataset}.{self._name}"
        if sinks.load_jobs:
            _ = (
                rows
                | "ToRow" >> beam.Map(to_bigquery_row)
                | "Load"
                >> WriteToBigQuery(
                    table_id.replace(".", ":", 1),
                    schema={"fields": bigquery_schema(OUTPUTS[self._name].model)},
                    method=WriteToBigQuery.Method.FILE_LOADS,
                    create_disposition=BigQueryDisposition.CREATE_NEVER,
                    write_disposition=BigQueryDisposition.WRITE_APPEND,
                )
            )
            return rows.pipeline | "NoneRefused" >> beam.Create([]).with_output_types(DeadLetter)
        return rows | "Insert" >> WriteToBigQueryRows(table_id, row_id=self._row_id)
