"""The closed set of exclusion reasons: every left-out candidate has exactly one.

Each reason says whether it withholds the candidate's text from the principal
(`withheld`): the catalog does not let them see it at `as_of` (access,
existence, revision, policy), so an answer that repeats the text leaks it
(`packer.verification.checks.GATE_REASONS`). A provenance failure does not: the text is not
the catalog's, and duplicates, conflicts and budget leave out text the
principal may see. Kept on the member, not in a list elsewhere, so a new
reason says it where it is declared (ARCHITECTURE.md, "How to add").
"""

from enum import StrEnum


class ExclusionReason(StrEnum):
    """Why a candidate did not reach the prompt (ARCHITECTURE.md, closed set)."""

    withheld: bool

    def __new__(cls, value: str, withheld: bool = False) -> "ExclusionReason":
        member = str.__new__(cls, value)
        member._value_ = value
        member.withheld = withheld
        return member

    UNAUTHORIZED = "unauthorized", True
    OTHER_TENANT = "other_tenant", True
    """A candidate claiming another tenant than the request's: retrieval crossed tenants.
    Its own reason, not `unauthorized`, so a leaking index is alertable by itself."""
    UNKNOWN_DOCUMENT = "unknown_document", True
    DELETED = "deleted", True
    SUPERSEDED = "superseded", True
    NOT_YET_EFFECTIVE = "not_yet_effective", True
    MISSING_PROVENANCE = "missing_provenance"
    HASH_MISMATCH = "hash_mismatch"
    POLICY_BLOCKED = "policy_blocked", True
    DUPLICATE_EXACT = "duplicate_exact"
    DUPLICATE_OVERLAP = "duplicate_overlap"
    DUPLICATE_NEAR = "duplicate_near"
    MERGED_ADJACENT = "merged_adjacent"
    NOT_APPLICABLE = "not_applicable"
    LOWER_AUTHORITY = "lower_authority"
    PER_DOCUMENT_CAP = "per_document_cap"
    OVER_BUDGET = "over_budget"
    CONFLICT_SIDE_OVER_BUDGET = "conflict_side_over_budget"
    OVERSIZED = "oversized"
    BLANK_TEXT = "blank_text"
