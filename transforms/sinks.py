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

Each backend of the audit rows is an object with one method,
`write(rows, name, row_id) -> Written`, listed by name in `AUDIT_SINKS`;
`audit_sink` is the one place the flags pick a name, and `write_prompts` the
one place the prompts' sink is picked. Rejected: an if-chain inside the
writer over files / load jobs / inserts (a new backend meant editing it, and
the prompt choice lived in the batch job).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import apache_beam as beam
from apache_beam.io.gcp.bigquery import BigQueryDisposition, WriteToBigQuery

from packer.formats import FileLimits, PromptLine
from schemas import DeadLetter
from schemas.bigquery import bigquery_schema
from schemas.tables import OUTPUTS
from transforms.bigquery_io import WriteToBigQueryRows, to_bigquery_row
from transforms.files import WriteJsonl, WriteParquet
from transforms.prompt_files import WritePromptLines
from transforms.pubsub_io import PublishMessages, prompt_message

RowId = Callable[[dict[str, Any]], str]
"""A row's BigQuery insertId, so a retried insert does not duplicate it."""


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


@dataclass(frozen=True)
class Written:
    """What a backend made of a table's rows: the rows it refused, the files it wrote."""

    refused: beam.PCollection[DeadLetter] | None = None
    files: beam.PCollection | None = None


class AuditSink(Protocol):
    """One backend for audit rows, built from the run's `Sinks` (see `AUDIT_SINKS`)."""

    def write(self, rows: beam.PCollection, name: str, row_id: RowId | None) -> Written: ...


class FileRows:
    """Audit rows as files under `--output` (Parquet, JSONL for dead letters)."""

    def __init__(self, sinks: Sinks) -> None:
        self._output = sinks.output
        self._window = sinks.window_seconds

    def write(self, rows: beam.PCollection, name: str, row_id: RowId | None) -> Written:
        if self._output is None:
            raise ValueError(f"no sink for {name}: pass --output or --bigquery_dataset")
        return Written(files=rows | "Files" >> WriteFiles(self._output, name, self._window))


class LoadJobRows:
    """Audit rows as BigQuery load jobs (batch on Dataflow); a failed load fails the job."""

    def __init__(self, sinks: Sinks) -> None:
        self._dataset = sinks.dataset

    def write(self, rows: beam.PCollection, name: str, row_id: RowId | None) -> Written:
        _ = (
            rows
            | "ToRow" >> beam.Map(to_bigquery_row)
            | "Load"
            >> WriteToBigQuery(
                f"{self._dataset}.{name}".replace(".", ":", 1),
                schema={"fields": bigquery_schema(OUTPUTS[name].model)},
                method=WriteToBigQuery.Method.FILE_LOADS,
                create_disposition=BigQueryDisposition.CREATE_NEVER,
                write_disposition=BigQueryDisposition.WRITE_APPEND,
            )
        )
        return Written()


class InsertRows:
    """Audit rows as BigQuery streaming inserts; the rows refused come back as dead letters."""

    def __init__(self, sinks: Sinks) -> None:
        self._dataset = sinks.dataset

    def write(self, rows: beam.PCollection, name: str, row_id: RowId | None) -> Written:
        table_id = f"{self._dataset}.{name}"
        return Written(refused=rows | "Insert" >> WriteToBigQueryRows(table_id, row_id=row_id))


AUDIT_SINKS: dict[str, Callable[[Sinks], AuditSink]] = {
    "files": FileRows,
    "bigquery_load_jobs": LoadJobRows,
    "bigquery_inserts": InsertRows,
}
"""Every backend of the audit rows, by name; a new backend is one class and one entry."""


def audit_sink(sinks: Sinks) -> str:
    """The backend the flags choose: files unless a dataset is named; loads only if asked."""
    if sinks.dataset is None:
        return "files"
    return "bigquery_load_jobs" if sinks.load_jobs else "bigquery_inserts"


class WriteAuditRows(beam.PTransform):
    """Audit rows of one table to the run's backend; outputs the rows that backend refused."""

    def __init__(self, name: str, sinks: Sinks, row_id: RowId | None = None) -> None:
        super().__init__()
        self._name = name
        self._sink = AUDIT_SINKS[audit_sink(sinks)](sinks)
        self._row_id = row_id
        self.written: beam.PCollection | None = None
        """Once applied with files as the sink: the files written (a job commits after them)."""

    def expand(self, rows: beam.PCollection) -> beam.PCollection[DeadLetter]:
        written = self._sink.write(rows, self._name, self._row_id)
        self.written = written.files
        if written.refused is not None:
            return written.refused
        return rows.pipeline | "NoneRefused" >> beam.Create([]).with_output_types(DeadLetter)


def write_prompts(
    prompts: beam.PCollection[PromptLine], sinks: Sinks, limits: FileLimits
) -> beam.PCollection | None:
    """Prompts to `--prompts_topic` when named, else prompt files; the files written, if any."""
    if sinks.prompts_topic is not None:
        _ = prompts | "PublishPrompts" >> PublishMessages(sinks.prompts_topic, prompt_message)
        return None
    if sinks.output is None:
        raise ValueError("no sink for prompts: pass --output or --prompts_topic")
    return prompts | "WritePrompts" >> WritePromptLines(sinks.output, "prompts", limits)
