"""The closed set of exclusion reasons: every left-out candidate has exactly one."""

from enum import StrEnum


class ExclusionReason(StrEnum):
    """Why a candidate did not reach the prompt (ARCHITECTURE.md, closed set)."""

    UNAUTHORIZED = "unauthorized"
    UNKNOWN_DOCUMENT = "unknown_document"
    DELETED = "deleted"
    SUPERSEDED = "superseded"
    NOT_YET_EFFECTIVE = "not_yet_effective"
    MISSING_PROVENANCE = "missing_provenance"
    HASH_MISMATCH = "hash_mismatch"
    POLICY_BLOCKED = "policy_blocked"
    DUPLICATE_EXACT = "duplicate_exact"
    DUPLICATE_OVERLAP = "duplicate_overlap"
    DUPLICATE_NEAR = "duplicate_near"
    MERGED_ADJACENT = "merged_adjacent"
    NOT_APPLICABLE = "not_applicable"
    LOWER_AUTHORITY = "lower_authority"
    PER_DOCUMENT_CAP = "per_document_cap"
    OVER_BUDGET = "over_budget"
    OVERSIZED = "oversized"
