"""The outputs of the jobs, in one table: name, row model, file type and BigQuery layout.

Batch, streaming, `evpack tables`, `evpack verify` and the report all read it:
a file sink writes `<output>/<name>/<name>-*.<file_type>`, a BigQuery sink the
table `<dataset>.<name>`, partitioned by day of `partition_field` and clustered
by `cluster_fields`. Prompts are not a BigQuery table (no partition field):
they go to files or to the generation topic.
"""

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from schemas.outputs import (
    DeadLetter,
    Delivery,
    ExclusionCount,
    ExclusionRecord,
    ManifestRow,
    PromptMessage,
    QueuedPrompt,
)
from schemas.run import RunRecord
from schemas.verification import VerificationRow

FileType = Literal["jsonl", "parquet"]


@dataclass(frozen=True)
class Output:
    """One output: the model its rows follow, its file type, its BigQuery layout."""

    name: str
    model: type[BaseModel]
    file_type: FileType
    partition_field: str | None = None
    cluster_fields: tuple[str, ...] = ("tenant_id",)


OUTPUTS: dict[str, Output] = {
    o.name: o
    for o in (
        Output("prompts", PromptMessage, "jsonl"),
        Output("held_prompts", PromptMessage, "jsonl"),
        Output("manifests", ManifestRow, "parquet", "event_time"),
        Output("exclusions", ExclusionRecord, "parquet", "event_time"),
        Output("exclusion_counts", ExclusionCount, "parquet", "window_start"),
        Output("dead_letters", DeadLetter, "jsonl", "received_at", ("stage",)),
        Output("verifications", VerificationRow, "parquet", "event_time"),
        Output("verify_dead_letters", DeadLetter, "jsonl"),
        Output("runs", RunRecord, "jsonl", "event_time", ("job",)),
        Output("outbox", QueuedPrompt, "jsonl"),
        Output("deliveries", Delivery, "jsonl"),
    )
}

AUDIT_TABLES: dict[str, Output] = {n: o for n, o in OUTPUTS.items() if o.partition_field}
"""The outputs that are also BigQuery tables (every audit table)."""

PACK_OUTPUTS = ("prompts", "manifests", "exclusions", "exclusion_counts", "dead_letters")
"""What a packing run (batch or streaming) writes."""

BATCH_OUTPUTS = (*PACK_OUTPUTS, "runs", "outbox", "held_prompts")
"""What a batch run writes: the packing outputs, its run record, with
`--prompts_topic` the prompts staged for the topic (`outbox`), and with
`--prompts_without_evidence hold` the prompts that carry no evidence (`held_prompts`).
Not among them: `deliveries/`, what was published after the commit; it outlives a
rerun, which reads it to send no prompt twice."""

BATCH_FILE_TYPES = {name: OUTPUTS[name].file_type for name in BATCH_OUTPUTS}
"""The outputs of a batch run as files under its output, and the file type of each."""

LATER_OUTPUTS = ("verifications", "verify_dead_letters", "replay")
"""What later commands (`evpack verify`, `evpack replay`) write into a run's folder: they
belong to that run, so `--overwrite` sets them aside with it (answers checked against
the earlier prompts would otherwise pass as checks of the new ones)."""
