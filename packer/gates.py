"""Gates: reauthorize, check provenance, applicable revision, policy.

Every candidate either passes as `Evidence` or is excluded with exactly one
reason. Candidate-supplied ACL, tenant and date fields are never trusted: the
catalog decides.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from packer.catalog import Catalog, RevisionState
from packer.records import Evidence, TextFacts, score_of
from packer.runtime import Memos
from schemas import Candidate, CatalogDocument, ExclusionReason, Request
from schemas._types import SENSITIVITY_LEVELS


@dataclass(frozen=True, slots=True)
class Exclusion:
    """A candidate left out, with its single reason and a short, text-free detail."""

    candidate: Candidate
    reason: ExclusionReason
    detail: str


def _authorization(
    request: Request, groups: frozenset[str], cand: Candidate, doc: CatalogDocument | None
) -> Exclusion | None:
    if cand.tenant_id is not None and cand.tenant_id != request.tenant_id:
        return Exclusion(cand, ExclusionReason.OTHER_TENANT, "candidate belongs to another tenant")
    if doc is None:
        return Exclusion(
            cand, ExclusionReason.UNKNOWN_DOCUMENT, "document not in the tenant's catalog"
        )
    principal = request.principal
    if principal.user_id not in doc.allowed_users and groups.isdisjoint(doc.allowed_groups):
        return Exclusion(cand, ExclusionReason.UNAUTHORIZED, "principal not allowed by the catalog")
    if doc.deleted:
        return Exclusion(cand, ExclusionReason.DELETED, "document deleted in the catalog")
    return None


def _provenance(cand: Candidate, facts: TextFacts) -> Exclusion | None:
    if not (
        cand.tenant_id
        and cand.revision_id
        and cand.source_url
        and cand.text_sha256
        and (cand.chunk_id or cand.span is not None)
    ):
        return _missing_provenance(cand)
    if facts.sha256 is None:
        return Exclusion(
            cand, ExclusionReason.HASH_MISMATCH, "text is not valid Unicode (lone surrogate)"
        )
    if cand.text_sha256 != facts.sha256 and cand.text_sha256.lower() != facts.sha256:
        return Exclusion(
            cand, ExclusionReason.HASH_MISMATCH, "text_sha256 is not the SHA-256 of the text"
        )
    return None


def _missing_provenance(cand: Candidate) -> Exclusion:
    missing = [
        name
        for name in ("tenant_id", "revision_id", "source_url", "text_sha256")
        if not getattr(cand, name)
    ]
    if not cand.chunk_id and cand.span is None:
        missing.append("chunk_id or span")
    return Exclusion(cand, ExclusionReason.MISSING_PROVENANCE, "missing " + ", ".join(missing))


def _revision(cand: Candidate, state: RevisionState, history: bool) -> Exclusion | None:
    rid = cand.revision_id
    if rid not in state.revisions:
        return Exclusion(
            cand, ExclusionReason.UNKNOWN_DOCUMENT, f"revision {rid} not in the catalog"
        )
    if rid not in state.effective:
        return Exclusion(
            cand, ExclusionReason.NOT_YET_EFFECTIVE, f"revision {rid} not effective at as_of"
        )
    if rid != state.applicable and not history:
        return Exclusion(
            cand, ExclusionReason.SUPERSEDED, f"revision {rid} superseded by {state.applicable}"
        )
    return None


def _policy(cand: Candidate, doc: CatalogDocument, clearance: str) -> Exclusion | None:
    if doc.sensitivity is None and cand.sensitivity is None:
        return None
    labels = [label for label in (doc.sensitivity, cand.sensitivity) if label is not None]
    unknown = [label for label in labels if label not in SENSITIVITY_LEVELS]
    if unknown:
        return Exclusion(
            cand, ExclusionReason.POLICY_BLOCKED, f"unknown sensitivity label {unknown[0]}"
        )
    allowed = SENSITIVITY_LEVELS.index(clearance)
    if any(SENSITIVITY_LEVELS.index(label) > allowed for label in labels):
        return Exclusion(
            cand, ExclusionReason.POLICY_BLOCKED, f"sensitivity above clearance {clearance}"
        )
    return None


def _blank(cand: Candidate) -> Exclusion | None:
    """A text of white space alone shows nothing. Left out, not packed as an empty block:
    the compact framing has no closing label, so an empty block would read the line after
    it (a note) as its text. Last of the gates: a withheld reason names it first."""
    text = cand.text
    if text and not text.isspace():  # `strip` copied every text to test it
        return None
    return Exclusion(cand, ExclusionReason.BLANK_TEXT, "text is white space only")


def _facets(named: Sequence[str]) -> tuple[str, ...]:
    """A candidate's facets, sorted once; most candidates tag none, and for them the set,
    the sort and the tuple were three allocations a candidate for an empty tuple."""
    return tuple(sorted(set(named))) if named else ()


def apply_gates(
    request: Request,
    candidates: Sequence[Candidate],
    catalog: Catalog,
    as_of: datetime,
    memos: Memos,
) -> tuple[list[Evidence], list[Exclusion]]:
    """Split the request's `candidates` into gated evidence and exclusions, gates in order."""
    passed: list[Evidence] = []
    excluded: list[Exclusion] = []
    states: dict[str, RevisionState] = {}
    tenant = request.tenant_id
    groups = frozenset(request.principal.groups)
    for cand in candidates:
        doc = catalog.get(tenant, cand.document_id) if cand.document_id else None
        verdict = _authorization(request, groups, cand, doc)
        if verdict is None:
            facts = memos.text_facts(cand.text)
            verdict = _provenance(cand, facts)
        if verdict is None:
            assert doc is not None
            state = states.get(doc.document_id)
            if state is None:
                state = states[doc.document_id] = catalog.revision_state(
                    tenant, doc.document_id, as_of
                )
            verdict = (
                _revision(cand, state, request.history)
                or _policy(cand, doc, request.principal.clearance)
                or _blank(cand)
            )
            if verdict is None:
                revision = state.revisions[cand.revision_id]  # type: ignore[index]
                passed.append(
                    Evidence(
                        candidate=cand,
                        document_id=doc.document_id,
                        revision_id=revision.revision_id,
                        effective_at=revision.effective_at,
                        text=cand.text,
                        facts=facts,
                        score=score_of(cand),
                        facets=_facets(cand.query_facets),
                        span=(cand.span.start, cand.span.end) if cand.span else None,
                    )
                )
                continue
        excluded.append(verdict)
    return passed, excluded
