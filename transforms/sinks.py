"""Where each output goes: files under `--output`, BigQuery tables, or a Pub/Sub topic.

Sources and sinks are choices, not pipelines; both jobs read the same flags:
- audit rows (manifests, exclusions, counts, dead letters) go to BigQuery
  `<--bigquery_dataset>.<name>` when a dataset is named, else to files under
  `--output` (Parquet, JSONL for dead letters; in streaming, one set of files
  per `--window_seconds` window);
- prompts go to `--prompts_topic` when named, else to files under `--output`.
  A streaming job publishes each prompt and writes its manifest and
  exclusions only once the topic took it (`transforms.io.publish`); a batch
  job stages them as `outbox/` files, published once the run is committed
  (`pipelines.delivery`), so a run that is refused publishes nothing.

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

from packer.parsing.strict_json import Unreadable
from schemas import DeadLetter
from schemas.outputs import QueuedPrompt
from schemas.prompt_formats import FileLimits, PromptLine
from transforms.io.base import AuditSink, RowId
from transforms.io.bigquery import InsertRows, LoadJobRows
from transforms.io.prompt_files import WritePromptLines
from transforms.io.publish import PublishWithOutcomes
from transforms.io.pubsub import prompt_message
from transforms.io.row_files import FileRows, WriteJsonl
from transforms.pack import Packed


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
    hold_without_evidence: bool = False
    """`--prompts_without_evidence hold`: a prompt that carries no evidence goes to
    `held_prompts/` under `output`, not to the prompts' sink (`transforms.job_outputs`)."""


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


def queued(line: PromptLine) -> QueuedPrompt:
    """A prompt line as the batch job stages it for the topic (`outbox/`)."""
    return QueuedPrompt(
        request_id=line.request_id,
        tenant_id=line.tenant_id,
        builder_version=line.builder_version,
        prompt_sha256=line.prompt_sha256,
        line=line.line,
        conflicts=[list(group) for group in line.conflicts],
        uncovered_facets=list(line.uncovered),
    )


def unqueued(raw: bytes | Unreadable) -> bytes | Unreadable:
    """The prompt line of a staged prompt (`queued`), as the bytes of a prompt file's line,
    for readers of a run's prompt lines (`evpack verify` and `evpack replay` of a run with
    `--prompts_topic`); anything else (a line that is no staged prompt, a file that could
    not be read) is given back as it is, for the reader to refuse as it refuses any
    unreadable line."""
    try:
        return QueuedPrompt.model_validate_json(raw).line.encode("utf-8")
    except ValueError:
        return raw


@dataclass(frozen=True)
class PromptDelivery:
    """How the prompts leave a job: published now by the job (streaming), with
    `timeout_seconds` to reach the topic; else staged for later."""

    timeout_seconds: float
    publish_now: bool
    board: str | None = None
    """A local streaming run: the `RefusalBoard` its launcher watches."""


@dataclass(frozen=True)
class SentPrompts:
    """What the prompts' sink made of them: the packed requests whose prompt it took
    (whose audit rows are then written), the dead letters of those it refused, the files."""

    delivered: beam.PCollection[Packed]
    refused: beam.PCollection[DeadLetter] | None = None
    files: beam.PCollection | None = None


def write_prompts(
    packed: beam.PCollection[Packed],
    sinks: Sinks,
    limits: FileLimits,
    delivery: PromptDelivery,
    run_id: str,
) -> SentPrompts:
    """Prompts published to `--prompts_topic` (streaming; each message names `run_id`),
    staged as `outbox/` files for it (batch), or written as prompt files."""
    topic = sinks.prompts_topic
    if topic is not None and delivery.publish_now:
        published = packed | "PublishPrompts" >> PublishWithOutcomes(
            topic,
            lambda p: prompt_message(p.line, run_id),
            delivery.timeout_seconds,
            "prompts_delivered",
            delivery.board,
        )
        return SentPrompts(published.delivered, published.refused)
    if sinks.output is None:
        raise ValueError("no sink for prompts: pass --output or --prompts_topic")
    if topic is not None:
        files = packed | "Queue" >> beam.Map(lambda p: queued(p.line))
        return SentPrompts(
            packed, files=files | "StagePrompts" >> WriteJsonl(sinks.output, "outbox")
        )
    lines = packed | "PromptLines" >> beam.Map(lambda p: p.line)
    return SentPrompts(
        packed, files=lines | "WritePrompts" >> WritePromptLines(sinks.output, "prompts", limits)
    )
