"""Input contract: one request is one question with its retrieved candidates."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from schemas._types import NonEmptyStr, UtcDatetime

Clearance = Literal["public", "internal", "confidential", "restricted"]


class _Input(BaseModel):
    """Inputs are immutable values; unknown fields are ignored so producers can add fields."""

    model_config = ConfigDict(frozen=True, extra="ignore")


class Principal(_Input):
    """Who asks: reauthorization checks this identity against the catalog."""

    user_id: NonEmptyStr
    groups: tuple[str, ...] = ()
    clearance: Clearance = "internal"


class Span(_Input):
    """Character offsets [start, end) of a candidate's text in its document revision."""

    start: int = Field(ge=0)
    end: int = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> "Span":
        if self.end < self.start:
            raise ValueError(f"span end {self.end} is before start {self.start}")
        return self


class Candidate(_Input):
    """One retrieved evidence record, with an immutable identity.

    Provenance fields may be missing on input: such a candidate is excluded as
    `missing_provenance` rather than failing its whole request. `acl_snapshot`
    (index-time ACL) is accepted and never trusted.
    """

    evidence_id: NonEmptyStr
    tenant_id: str | None = None
    document_id: str | None = None
    revision_id: str | None = None
    chunk_id: str | None = None
    source_url: str | None = None
    title: str | None = None
    section: str | None = None
    effective_at: UtcDatetime | None = None
    span: Span | None = None
    text: str
    text_sha256: str | None = None
    retrieval_score: float = 0.0
    rerank_score: float | None = None
    query_facets: tuple[str, ...] = ()
    authority: float | None = Field(default=None, ge=0.0, le=1.0)
    sensitivity: str | None = None
    acl_snapshot: tuple[str, ...] | None = None


class BudgetOverride(_Input):
    """Per-request budget overrides of the packing config."""

    input_limit: int | None = Field(default=None, gt=0)
    reserved_answer: int | None = Field(default=None, ge=0)
    max_evidence_tokens: int | None = Field(default=None, gt=0)


class Request(_Input):
    """One question to answer, as retrieval hands it over.

    `as_of` is the applicability time for revisions; it defaults to `event_time`.
    """

    request_id: NonEmptyStr
    tenant_id: NonEmptyStr
    principal: Principal
    question: NonEmptyStr
    facets: tuple[str, ...] = ()
    as_of: UtcDatetime | None = None
    event_time: UtcDatetime | None = None
    history: bool = False
    budget: BudgetOverride | None = None
    candidates: tuple[Candidate, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_evidence(self) -> "Request":
        seen: set[str] = set()
        for cand in self.candidates:
            if cand.evidence_id in seen:
                raise ValueError(f"evidence_id {cand.evidence_id!r} appears twice in the request")
            seen.add(cand.evidence_id)
        return self
