"""Where each output goes: files under `--output`, BigQuery tables, or a Pub/Sub topic.

Sources and sinks are choices, not pipelines; both jobs read the same flags:
- audit rows (manifests, exclusions, counts, dead letters) go to BigQuery
  `<--bigquery_dataset>.<name>` when a dataset is named, else to files under
  `--output` (Parquet, JSONL for dead letters; in streaming, one set of files
  per `--window_seconds` window);
- prompts go to `--prompts_topic` when named, else to files under `--output`.

BigQuery: streaming inserts (`transforms.io.bigquery`) everywhere the
emulator may stand in, and batch load jobs (`WriteToBigQuery` with
`FILE_LOADS`, staged under `--temp_location`) on Dataflow, where loads are the
idiomatic, free and all-or-nothing path; a load that fails fails the job. A
row the insert sink refuses comes back as a dead letter, so nothing is lost.

Each backend of the audit rows is an object with one method,
`write(rows, name, row_id) -> Written`, listed by name in `AUDIT_SINKS`;
`audit_sink` is the one place a name is picked (`--audit_sink`, or the
locations the run names), and `write_prompts` the one place the prompts' sink
is picked. Rejected: an if-chain inside the
writer over files / load jobs / inserts (a new backend meant editing it, and
the prompt choice lived in the batch job).
"""

from collections.abc import Callable
from dataclasses import dataclass

import apache_beam as beam

from schemas import DeadLetter
from schemas.prompt_formats import FileLimits, PromptLine
from transforms.io.base import AuditSink, RowId
from transforms.io.bigquery import InsertRows, LoadJobRows
from transforms.io.prompt_files import WritePromptLines
from transforms.io.pubsub import PublishMessages, prompt_message
from transforms.io.row_files import FileRows


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
    audit: str | None = None
    """`--audit_sink`: the audit rows' backend by its name in `AUDIT_SINKS`, or None
    for the one the locations imply."""
    table_prefix: str = ""
    """Put before each BigQuery table's name: a batch run writes into staging tables of
    its own and commits them whole (`transforms.io.table_commit`)."""


def manifest_row_id(row: dict) -> str:
    """insertId of a manifest row: one per request."""
    return row["request_id"]


def exclusion_row_id(row: dict) -> str:
    """insertId of an exclusion row: one per (request, candidate)."""
    return f"{row['request_id']}/{row['evidence_id']}"


def verification_row_id(row: dict) -> str:
    """insertId of a verification row: one per request and answer line (a rerun of the same
    answers file inserts nothing twice; two answers for one request are two rows)."""
    return f"{row['request_id']}/{row['answer_key']}/{row['answer_file']}:{row['answer_line']}"


def output_of(sinks: Sinks) -> str:
    """`--output`, for a backend that writes under it."""
    if sinks.output is None:
        raise ValueError("this audit sink writes under --output: pass --output")
    return sinks.output


def dataset_of(sinks: Sinks) -> str:
    """`--bigquery_dataset`, for a backend that writes to its tables."""
    if sinks.dataset is None:
        raise ValueError("this audit sink writes to BigQuery: pass --bigquery_dataset")
    return sinks.dataset


def load_jobs(sinks: Sinks) -> LoadJobRows:
    """BigQuery load jobs: a batch job's backend (a streaming job inserts)."""
    if sinks.window_seconds is not None:
        raise ValueError("bigquery_load_jobs is for batch jobs; a streaming job inserts")
    return LoadJobRows(dataset_of(sinks), sinks.table_prefix)


AUDIT_SINKS: dict[str, Callable[[Sinks], AuditSink]] = {
    "files": lambda sinks: FileRows(output_of(sinks), sinks.window_seconds),
    "bigquery_load_jobs": load_jobs,
    "bigquery_inserts": lambda sinks: InsertRows(dataset_of(sinks), sinks.table_prefix),
}
"""Every backend of the audit rows, by name, built from the run's locations (a
ValueError names a missing one); a new backend is one class in `transforms/io/`
and one entry here, which `--audit_sink` then offers by name."""


def audit_sink(sinks: Sinks) -> str:
    """The backend named by `--audit_sink`, else the one the locations imply: files
    unless a dataset is named; BigQuery load jobs only in a batch job on Dataflow."""
    if sinks.audit is not None:
        return sinks.audit
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
