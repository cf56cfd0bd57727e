"""A pack step's outputs, written the same way by the batch and streaming jobs.

Every output is first checked with its sink's own encoder (`EncodableRows`),
so a row no sink can take costs that row, never the run, in either job. A
batch job writing audit rows to Parquet files writes the Arrow batches that
check made (`WriteArrowBatches`), so each row is converted to Arrow once.
Prompts and audit rows go where `transforms.sinks` chooses; exclusions are
counted by the job's own counter (the whole run in batch, per window in
streaming).

Where prompts are published (streaming), each request's `Packed` line and
audit rows go to the topic together: the manifest and exclusions of a
prompt the topic refused are never written, and the prompt is a `publish`
dead letter instead (`transforms.io.publish`), so the manifests say which
prompts the queue has (a restart remembers exactly those).

Dead letters are collected in one place, as Beam's error-handler idiom does:
each stage registers its dead-letter collection under its name in the job's
`DeadLetters` (where the stage is applied: `transforms.pack_job` for parse and
pack), which `write_outputs` flattens once, counts and writes; a registration
after that, or a name twice, fails while the pipeline is built. A job with a dead-letter
topic (streaming) cuts each letter to fit a message and publishes all of
them, with those the dead_letters table refused (one the topic refuses is
kept in the table, and logged); without one (batch) the
refused ones stay in JSONL files beside the table. Rejected: a tuple of
dead-letter collections listed by hand in each job (batch listed 9,
streaming 6, and a new stage's letters were easy to leave out); one
PTransform around the writes (it would nest `WritePrompts`, `WriteManifests`,
... under one step, and the Dataflow job graph names them at the top level).
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import apache_beam as beam
from apache_beam.metrics import Metrics
from pydantic import BaseModel

from packer.parsing.dead_letters import bounded
from packer.parsing.names import METRICS_NAMESPACE
from schemas import DeadLetter, ExclusionCount, ExclusionRecord, ManifestRow
from schemas.prompt_formats import FileLimits, PromptLine
from schemas.tables import OUTPUTS
from transforms.io.base import RowId
from transforms.io.prompt_files import WritePromptLines
from transforms.io.publish import PublishWithOutcomes
from transforms.io.pubsub import dead_letter_message
from transforms.io.row_files import WriteArrowBatches, WriteJsonl
from transforms.pack import Packed, PackOutputs, unpacked
from transforms.run_metrics import CountDeadLetters
from transforms.sink_rows import (
    EncodableRows,
    Encoder,
    SinkRows,
    arrow_encoder,
    prompt_line_encoder,
)
from transforms.sinks import (
    PromptDelivery,
    Sinks,
    WriteAuditRows,
    audit_sink,
    exclusion_row_id,
    manifest_row_id,
    output_of,
    write_prompts,
)

Row = TypeVar("Row", bound=BaseModel)


class StageOutputs(Protocol):
    """What a stage that refuses elements returns: its dead letters among its outputs."""

    @property
    def dead_letters(self) -> beam.PCollection[DeadLetter]: ...


Stage = TypeVar("Stage", bound=StageOutputs)


class DeadLetters:
    """A job's dead-letter collections, each registered under the stage that made it, and
    flattened once.

    As Beam's `ErrorHandler`: a stage registers its own letters (`take`, `add`), the one
    `flatten` closes the collector, and a registration after it, or one stage name
    registered twice, fails while the pipeline is built, so no stage's letters are left
    out silently. `of` gives named stages' letters back (the batch job's progress counts
    the records parse and pack refused).
    """

    def __init__(self) -> None:
        self._stages: dict[str, beam.PCollection[DeadLetter]] = {}
        self._closed = False

    def add(self, stage: str, letters: beam.PCollection[DeadLetter]) -> None:
        if self._closed:
            raise RuntimeError(f"dead letters of {stage} registered after they were written")
        if stage in self._stages:
            raise ValueError(f"dead letters of {stage} registered twice")
        self._stages[stage] = letters

    def take(self, stage: str, outputs: Stage) -> Stage:
        """A stage's outputs, its dead letters registered under `stage`."""
        self.add(stage, outputs.dead_letters)
        return outputs

    def of(self, *stages: str) -> dict[str, beam.PCollection[DeadLetter]]:
        return {stage: self._stages[stage] for stage in stages}

    def flatten(self) -> beam.PCollection[DeadLetter]:
        self._closed = True
        return tuple(self._stages.values()) | "AllDeadLetters" >> beam.Flatten()


@dataclass(frozen=True)
class OutputPlan:
    """Where a job's outputs go, and what the two jobs do differently."""

    sinks: Sinks
    prompt_limits: FileLimits
    """The prompt format's per-file limits, for prompts written as files."""
    count_exclusions: beam.PTransform
    """Exclusion records -> `ExclusionCount` rows (per run, or per window)."""
    run_id: str
    """This run's id, stamped on every audit row it writes (`with_run_id`) and on each
    prompt message."""
    delivery: PromptDelivery
    """How prompts for a topic leave the job (published now, or staged)."""
    dead_letter_topic: str | None = None
    """Streaming: every dead letter, cut to fit a message, is also published here."""


@dataclass(frozen=True)
class WrittenOutputs:
    """What writing the outputs leaves for the job's own last steps."""

    dead_letters: beam.PCollection[DeadLetter]
    """Every dead letter of the job, counted (and bounded when published)."""
    files: list[beam.PCollection]
    """The files written, for a job that commits after them."""


def write_outputs(packed: PackOutputs, letters: DeadLetters, plan: OutputPlan) -> WrittenOutputs:
    """Check and write prompts, manifests, exclusions, their counts, then every dead letter
    (`packed`'s own registered in `letters` by the job: `transforms.pack_job`)."""
    files, manifests, exclusions = _send_prompts(packed, letters, plan)
    files += _write_audit_rows(manifests, exclusions, letters, plan)
    dead_letters, letter_files = _write_dead_letters(letters, plan)
    return WrittenOutputs(dead_letters, files + letter_files)


def _send_prompts(
    packed: PackOutputs, letters: DeadLetters, plan: OutputPlan
) -> tuple[list[beam.PCollection], beam.PCollection, beam.PCollection]:
    """Send the prompts that encode to their sink (those without evidence to `held_prompts/`
    instead when the run holds them); the files written, and the manifests and exclusion
    rows of the prompts the sink took or held (all of them, but where it may refuse)."""
    encodable = _encodable(packed.packed, "Prompts", "prompts", _packed_line_encoder, letters).rows
    to_send, files = encodable, []
    held: beam.PCollection[Packed] | None = None
    if plan.sinks.hold_without_evidence:
        to_send, held = encodable | "WithoutEvidence" >> beam.Partition(_held_partition, 2)
        files.append(
            held
            | "HeldLines" >> beam.Map(_held_line)
            | "WriteHeldPrompts"
            >> WritePromptLines(
                _require_output(plan.sinks, "held_prompts"), "held_prompts", plan.prompt_limits
            )
        )
    sent = write_prompts(to_send, plan.sinks, plan.prompt_limits, plan.delivery, plan.run_id)
    files += [] if sent.files is None else [sent.files]
    if sent.refused is not None:
        letters.add("Publish", sent.refused)
    if sent.delivered is to_send:
        return files, packed.manifests, packed.exclusions
    recorded = sent.delivered
    if held is not None:
        recorded = (sent.delivered, held) | "DeliveredOrHeld" >> beam.Flatten()
    _, manifests, exclusions = unpacked(recorded)
    return files, manifests, exclusions


def _held_partition(packed: Packed, partitions: int) -> int:
    """1 for a prompt that carries no evidence (held), 0 for one the sink gets."""
    return 0 if packed.manifest.evidence else 1


def _held_line(packed: Packed) -> PromptLine:
    """A held prompt's line, counted (`prompts_held`: the summary's figure)."""
    Metrics.counter(METRICS_NAMESPACE, "prompts_held").inc()
    return packed.line


def _write_audit_rows(
    manifests: beam.PCollection[ManifestRow],
    exclusions: beam.PCollection[ExclusionRecord],
    letters: DeadLetters,
    plan: OutputPlan,
) -> list[beam.PCollection]:
    """Stamp, check and write the manifests, the exclusion rows and their counts; the files
    written. Bounded rows going to files are written from the Arrow batches their check
    already made."""
    sinks = plan.sinks
    stamp = with_run_id(plan.run_id)
    checked_manifests = _encodable(
        manifests | "RunOfManifests" >> beam.Map(stamp),
        "Manifests",
        "manifests",
        arrow_encoder(ManifestRow),
        letters,
    )
    checked_exclusions = _encodable(
        exclusions | "RunOfExclusions" >> beam.Map(stamp),
        "Exclusions",
        "exclusions",
        arrow_encoder(ExclusionRecord),
        letters,
    )
    counted = checked_exclusions.rows | "CountExclusions" >> plan.count_exclusions
    counts = _encodable(
        counted | "RunOfCounts" >> beam.Map(stamp),
        "Counts",
        "exclusion_counts",
        arrow_encoder(ExclusionCount),
        letters,
    )
    audit: tuple[tuple[str, str, SinkRows, RowId | None], ...] = (
        ("WriteManifests", "manifests", checked_manifests, manifest_row_id),
        ("WriteExclusions", "exclusions", checked_exclusions, exclusion_row_id),
        ("WriteCounts", "exclusion_counts", counts, None),
    )
    files = []
    for label, name, checked, row_id in audit:
        if checked.encoded is not None and audit_sink(sinks) == "files":
            model = OUTPUTS[name].model
            files.append(
                checked.encoded | label >> WriteArrowBatches(output_of(sinks), name, model)
            )
            continue
        writer = WriteAuditRows(name, sinks, row_id)
        letters.add(label, checked.rows | label >> writer)
        files += _written(writer)
    return files


def _write_dead_letters(
    letters: DeadLetters, plan: OutputPlan
) -> tuple[beam.PCollection[DeadLetter], list[beam.PCollection]]:
    """Stamp, count and write every dead letter of the job (published, bounded, when a
    topic is named); the counted dead letters and the files written."""
    sinks = plan.sinks
    stamp = with_run_id(plan.run_id)
    dead_letters = (
        letters.flatten()
        | "RunOfDeadLetters" >> beam.Map(stamp)
        | "CountDeadLetters" >> CountDeadLetters()
    )
    if plan.dead_letter_topic is not None:
        dead_letters = dead_letters | "Bound" >> beam.Map(bounded)
    writer = WriteAuditRows("dead_letters", sinks)
    refused = dead_letters | "WriteDeadLetters" >> writer | "RunOfRefused" >> beam.Map(stamp)
    files = _written(writer)
    if plan.dead_letter_topic is not None:
        _ = (
            (dead_letters, refused | "BoundRejected" >> beam.Map(bounded))
            | "DeadLettersToPublish" >> beam.Flatten()
            | "PublishDeadLetters"
            >> PublishWithOutcomes(
                plan.dead_letter_topic,
                dead_letter_message,
                plan.delivery.timeout_seconds,
                "dead_letters_published",
                plan.delivery.board,
            )
        )
    elif sinks.dataset is not None:  # what the dead_letters table refuses stays in the files
        output = _require_output(sinks, "dead_letters")
        files.append(refused | "KeepRefusedDeadLetters" >> WriteJsonl(output, "dead_letters"))
    return dead_letters, files


def with_run_id(run_id: str) -> Callable[[Row], Row]:
    """An audit row as this run writes it: with its `run_id`.

    Stamped where the rows are written, not where they are made: `packer/` decides
    what a request's rows say and knows no run (the same rows are re-packed by
    `evpack replay` and compared field by field, run id aside). Rejected: the id as
    a parameter of the pack step, which would put the run into every decision.
    """

    def stamped(row: Row) -> Row:
        return row.model_copy(update={"run_id": run_id})

    return stamped


def _encodable(
    rows: beam.PCollection[BaseModel],
    label: str,
    sink: str,
    encode: Encoder,
    letters: DeadLetters,
) -> SinkRows:
    """The rows `encode` accepts (and, bounded, their encoding); the dead letters of the
    others go to `letters`."""
    return letters.take(label, rows | f"Encode{label}" >> EncodableRows(sink, encode))


def _packed_line_encoder(packed: Sequence[Packed]) -> object:
    """A request's prompt line as its sink encodes it."""
    return prompt_line_encoder([p.line for p in packed])


def _written(writer: WriteAuditRows) -> list[beam.PCollection]:
    return [] if writer.written is None else [writer.written]


def _require_output(sinks: Sinks, name: str) -> str:
    if sinks.output is None:
        raise ValueError(f"no sink for {name}: pass --output")
    return sinks.output
