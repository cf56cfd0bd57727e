"""Output records: the prompt message and the audit rows (ids only, never evidence text)."""

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas._types import UtcDatetime
from schemas.reasons import ExclusionReason


class _Output(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RenderedMessage(_Output):
    """One chat message of the rendered prompt."""

    role: str
    content: str


class LabelEntry(_Output):
    """Request-local citation label and the evidence it stands for."""

    label: str
    evidence_id: str


class PromptMessage(_Output):
    """What the generation queue receives for one request."""

    request_id: str
    tenant_id: str
    model: str
    messages: list[RenderedMessage]
    label_map: list[LabelEntry]
    prompt_tokens: int
    builder_version: str
    config_hash: str


class QueuedPrompt(_Output):
    """A prompt staged for the generation topic by a batch run (`outbox/`): the line as
    the topic gets it and the facts its message attributes carry. The run publishes it
    only once the run is committed (`pipelines.delivery`)."""

    request_id: str
    tenant_id: str
    builder_version: str
    prompt_sha256: str
    line: str
    conflicts: list[list[str]]
    uncovered_facets: list[str]


class Delivery(_Output):
    """One prompt of the outbox a batch run delivered to its topic (`deliveries/`): with
    the Pub/Sub message id, or as a duplicate of a prompt an earlier run delivered
    (same request id and prompt hash), which is not sent again; or, written before its
    request is sent, the intent to send it (`intended`, no message id yet)."""

    request_id: str
    prompt_sha256: str
    run_id: str
    topic: str
    outcome: Literal["delivered", "duplicate", "intended"]
    message_id: str | None
    delivered_by: str
    """The run whose message the consumer got: this run, or the earlier one."""
    dedup_id: str | None = None
    """The message's `dedup_id` attribute: `<run id>:<request id>` of the run that first
    meant to send it, kept by every later attempt (None in records before it)."""


class BudgetLedger(_Output):
    """The token ledger of one prompt, counted with the configured tokenizer."""

    input_limit: int
    reserved_answer: int
    safety_margin: int
    available: int
    used: int
    prompt_tokens: int


class ManifestEvidence(_Output):
    """One packed evidence block: its label, identity, cost and exactly what was shown.

    `partial` blocks show a run of whole sentences of their candidate:
    `span_start` and `span_end` locate it in the revision (null when the
    candidate gave no span that matches its text) and `text_sha256` is the
    SHA-256 of the text shown, so the label cites exactly those bytes. For
    whole blocks all three are the candidate's own. Two columns, not a nested
    span record: a nullable record inside the repeated `evidence` is valid
    BigQuery, but the local emulator cannot create such a table.
    """

    label: str
    evidence_id: str
    document_id: str
    revision_id: str
    chunk_id: str
    source_url: str
    tokens: int
    facets: list[str]
    derived_from: list[str]
    partial: bool = False
    span_start: int | None = None
    span_end: int | None = None
    text_sha256: str = ""


class Conflict(_Output):
    """Passages from different documents that report the same thing with a different
    number, date, name or stance (`labels`: the members that were packed; `rules`: what
    found it: `copy` for copies of one report, `number` or `date` for two documents
    answering the question's slot differently)."""

    evidence_ids: list[str]
    labels: list[str]
    rules: list[str] = []


class Resolution(_Output):
    """A conflict group and the rule that resolved it (`schemas.config.ResolutionConfig`):
    `jurisdiction`, `product_version`, `authority` (the members in `excluded` left
    out with their reason), or `keep_both` (the members in `kept` flagged together);
    `detail` says what the rule compared."""

    evidence_ids: list[str]
    rule: str
    kept: list[str]
    excluded: list[str]
    detail: str


class ReasonCount(_Output):
    """How many candidates one reason excluded."""

    reason: str
    count: int


class ManifestRow(_Output):
    """The audit record of one request: enough to rebuild and verify its prompt."""

    request_id: str
    tenant_id: str
    event_time: UtcDatetime | None
    as_of: UtcDatetime | None
    builder_version: str
    config_hash: str
    model: str
    tokenizer: str
    budget: BudgetLedger
    order_policy: str
    candidates_in: int
    evidence: list[ManifestEvidence]
    uncovered_facets: list[str]
    facets_untagged: bool = False
    """The request named facets but no candidate carries `query_facets`: coverage is
    unknown, so no facet is declared uncovered (docs/input.md, "Facets")."""
    conflicts: list[Conflict]
    resolutions: list[Resolution] = []
    excluded: list[ReasonCount]
    prompt_sha256: str
    catalog_version: str
    """Fingerprint of the catalog entries the request was packed against (see
    `packer.catalog_slice`): the same facts give the same version in every catalog mode."""
    run_id: str | None = None
    """The run that wrote the row (`schemas.run.new_run_id`): the job stamps it as it writes
    (`transforms.job_outputs`); null only in rows of versions before run ids."""


class ExclusionRecord(_Output):
    """One left-out candidate and its single reason."""

    request_id: str
    tenant_id: str
    event_time: UtcDatetime | None
    evidence_id: str
    document_id: str | None
    revision_id: str | None
    reason: ExclusionReason
    detail: str
    builder_version: str
    run_id: str | None = None
    """The run that wrote the row, as `ManifestRow.run_id`."""


class ExclusionCount(_Output):
    """Exclusions per tenant and reason, over a window (or the whole batch run)."""

    tenant_id: str
    reason: str
    count: int
    window_start: UtcDatetime | None
    window_end: UtcDatetime | None
    run_id: str | None = None
    """The run that wrote the row, as `ManifestRow.run_id`."""


DeadLetterStage = Literal[
    "parse",
    "validate",
    "dedupe",
    "group",
    "pack",
    "catalog",
    "format",
    "write",
    "bigquery_insert",
    "publish",
    "answer",
    "prompt",
    "convert",
]
"""Where a record was set aside: the closed set of stages, each a row of the
dead-letter table of docs/dead-letters.md (a test holds the two together)."""


def _now() -> datetime:
    return datetime.now(UTC)


class DeadLetter(_Output):
    """An input that could not be processed, kept whole with the reason.

    `received_at` is when the job set it aside (wall clock): dead letters are
    audited by day, and the record may be too broken to carry a time of its own.
    """

    received_at: UtcDatetime = Field(default_factory=_now)
    stage: DeadLetterStage
    error: str
    payload: str
    source: str
    request_id: str | None
    builder_version: str
    run_id: str | None = None
    """The run that wrote the row, as `ManifestRow.run_id`."""
