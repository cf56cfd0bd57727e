"""The data contract: one pydantic source for every record the job reads or writes.

Arrow and BigQuery schemas are derived from these models (`schemas.arrow`,
`schemas.bigquery`); they are never written by hand.
"""

from schemas.catalog import CatalogDocument, Revision
from schemas.config import DedupConfig, PackingConfig, ResolutionConfig, UtilityWeights
from schemas.outputs import (
    BudgetLedger,
    Conflict,
    DeadLetter,
    ExclusionCount,
    ExclusionRecord,
    LabelEntry,
    ManifestEvidence,
    ManifestRow,
    PromptMessage,
    ReasonCount,
    RenderedMessage,
    Resolution,
)
from schemas.reasons import ExclusionReason
from schemas.request import BudgetOverride, Candidate, Principal, Request, Span

__all__ = [
    "BudgetLedger",
    "BudgetOverride",
    "Candidate",
    "CatalogDocument",
    "Conflict",
    "DeadLetter",
    "DedupConfig",
    "ExclusionCount",
    "ExclusionReason",
    "ExclusionRecord",
    "LabelEntry",
    "ManifestEvidence",
    "ManifestRow",
    "PackingConfig",
    "Principal",
    "PromptMessage",
    "ReasonCount",
    "RenderedMessage",
    "Request",
    "Resolution",
    "ResolutionConfig",
    "Revision",
    "Span",
    "UtilityWeights",
]
