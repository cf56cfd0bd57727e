"""Verification rows: one per answer a model returned, checked against its packet."""

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas._types import UtcDatetime

CheckName = Literal[
    "answered",
    "labels_exist",
    "cites_evidence",
    "no_leaked_ids",
    "factual_sentences_cited",
    "figures_supported",
    "names_supported",
    "conflicts_reported",
    "uncovered_facets_declared",
    "abstention",
    "no_excluded_text",
]
"""The deterministic checks of an answer, in the order they run (docs/verify.md)."""

Outcome = Literal["pass", "fail", "skip"]

Scope = Literal["citation", "packet"]
"""What an answer's figures, dates and quotes were checked against: the blocks each sentence
cites (`citation`), or every block of its prompt (`packet`, citation checks skipped)."""

AnswerStatus = Literal[
    "succeeded",
    "errored",
    "canceled",
    "expired",
    "no_content",
    "truncated",
    "unknown_request",
    "ambiguous_request",
    "no_prompt",
]
"""`succeeded` answers are checked. `errored`, `canceled`, `expired` and `no_content` (a
success without any text) are the API's failures, each its own outcome; `truncated`, an
answer the output limit cut off (`stop_reason` says which), is not checked; nor are answers
whose id names no request of the run (or several), or whose prompt line is missing.
None of these is a passed answer: `evpack verify --max_failed` counts them as failures."""


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CheckResult(_Row):
    """One check of one answer: its outcome and what made it fail."""

    name: CheckName
    outcome: Outcome
    offending: list[str]
    """Labels, ids, figures, facets or excluded evidence ids that failed the check."""
    sentences: list[str]
    """The answer's sentences that failed it."""
    detail: str
    """Why it failed; for `figures_supported`, also the figures it found derived by
    arithmetic the answer wrote out over supported figures ("derived: 60 * £10 = £600")."""


def _now() -> datetime:
    return datetime.now(UTC)


class VerificationRow(_Row):
    """The verdict on one answer. `passed` is null when the answer was not checked (see
    `AnswerStatus`).

    `answer_file`, `answer_line` and `answer_sha256` join a row back to its result
    line; several answers for one request (retries, samples, two models) are
    told apart by them, and all but the first (by file and line; streaming: by
    arrival) are marked `duplicate`.
    """

    request_id: str | None
    answer_key: str
    """The id the result line named the request by (custom_id, label or request_id)."""
    answer_file: str | None = None
    """The answers file the line was read from (streaming: `pubsub:<message id>`)."""
    answer_line: int | None = None
    """The line's 1-based number in that file (streaming: null)."""
    answer_sha256: str | None = None
    """SHA-256 of the answer text as UTF-8 (of the empty text when there is none); set on
    every row `evpack verify` writes (null only in rows of older versions)."""
    duplicate: bool = False
    """Another answer for this request came before this one."""
    answers_for_request: int | None = None
    """How many answers of this answer set name the request (streaming: null, unknown)."""
    tenant_id: str | None
    event_time: UtcDatetime | None
    """The request's event time (from its manifest), for per-day dashboards."""
    verified_at: UtcDatetime = Field(default_factory=_now)
    answer_format: str
    scope: Scope = "citation"
    """`evpack verify --scope` of the run, on every row (streaming: always `citation`)."""
    answer_set: str | None = None
    """`evpack verify --answer_set` of the run, on every row: a folder keeps each set in a
    folder of its own, a BigQuery table keeps every set's rows together, and the report
    shows one set at a time. Null in streaming verification and in older rows."""
    status: AnswerStatus
    error: str | None
    stop_reason: str | None = None
    """Why the model stopped, as its result line says (`stop`, `end_turn`, `length`,
    `max_tokens`, `MAX_TOKENS`, ...); null where the answer format carries none."""
    passed: bool | None
    sentences: int
    cited_sentences: int
    labels_cited: list[str]
    checks: list[CheckResult]
    failed_checks: list[str]
    builder_version: str | None
    config_hash: str | None
    run_id: str | None = None
    """The packing run whose manifest the answer was checked against (its `run_id`): a
    verification belongs to the run it checks; null when no manifest was found."""
