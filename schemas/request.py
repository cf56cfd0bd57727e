"""Input contract: one request is one question with its retrieved candidates."""

from typing import Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from schemas._types import (
    INT64_MAX,
    KNOWN_UNICODE,
    MAX_ITEMS,
    Count,
    Identifier,
    Items,
    NonEmptyStr,
    UtcDatetime,
    refuse_repeats,
    unencodable,
)

Clearance = Literal["public", "internal", "confidential", "restricted"]


MAX_FACETS = 1_000


class _Input(BaseModel):
    """Inputs are immutable values; unknown fields are ignored so producers can add fields.

    Whatever a producer sends, a valid input can be written by every sink: each
    string encodes as UTF-8 (`unencodable`, over every field), floats are finite,
    integers fit int64 and timestamps fit years 1..9999 in UTC.

    Strict: a value is taken only as the JSON type its field has, so nothing is
    read as what it is not: `true` is not the budget 1, `"0.5"` not a score,
    `1` not `true`, `"100"` not an integer. Arrays (`Items`) and timestamps
    (ISO 8601 text, `UtcDatetime`) are the two exceptions JSON needs. Rejected:
    pydantic's lax mode, which converts all of these without a word.
    """

    model_config = ConfigDict(frozen=True, extra="ignore", allow_inf_nan=False, strict=True)

    @model_validator(mode="after")
    def _encodable(self, info: ValidationInfo) -> Self:
        if info.context and info.context.get(KNOWN_UNICODE):  # see `json_context`
            return self
        errors = unencodable(self.__dict__)
        if errors:
            raise ValidationError.from_exception_data(type(self).__name__, errors)
        return self


class Principal(_Input):
    """Who asks: reauthorization checks this identity against the catalog."""

    user_id: NonEmptyStr
    groups: Items[str] = ()
    clearance: Clearance = "internal"


class Span(_Input):
    """Character offsets [start, end) of a candidate's text in its document revision."""

    start: Count
    end: Count

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
    query_facets: Items[str] = ()
    authority: float | None = Field(default=None, ge=0.0, le=1.0)
    sensitivity: str | None = None
    acl_snapshot: Items[str] | None = None


class BudgetOverride(_Input):
    """Per-request budget overrides of the packing config."""

    input_limit: int | None = Field(default=None, gt=0, le=INT64_MAX)
    reserved_answer: int | None = Field(default=None, ge=0, le=INT64_MAX)
    max_evidence_tokens: int | None = Field(default=None, gt=0, le=INT64_MAX)


class Request(_Input):
    """One question to answer, as retrieval hands it over.

    `as_of` is the applicability time for revisions; it defaults to `event_time`.
    `jurisdiction` and `product_version` say which documents apply when sources
    disagree (`schemas.config.ResolutionConfig`), against the catalog's.
    """

    request_id: Identifier
    tenant_id: Identifier
    principal: Principal
    question: NonEmptyStr
    facets: Items[str] = Field(default=(), max_length=MAX_FACETS)
    as_of: UtcDatetime | None = None
    event_time: UtcDatetime | None = None
    history: bool = False
    jurisdiction: str | None = None
    product_version: str | None = None
    budget: BudgetOverride | None = None
    candidates: Items[Candidate] = Field(min_length=1, max_length=MAX_ITEMS)  # for the schema

    @model_validator(mode="after")
    def _unique_evidence(self) -> "Request":
        refuse_repeats("evidence_id", (c.evidence_id for c in self.candidates))
        return self
