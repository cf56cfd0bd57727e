"""Verification rows: an answer's row, checked against the packet its request was given
(`verified_row`) or not checked, with the reason (`unverified_row`); the packet built from a
manifest, its prompt and, when given, the request (`packet_of`). Plain functions, shared by
the batch (`transforms.verification.verify`) and streaming
(`transforms.verification.verify_stream`) verifiers.
"""

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from packer.verification.answers import Answer, PromptText
from packer.verification.checks import (
    DEFAULTS,
    GATE_REASONS,
    CheckSettings,
    GivenPacket,
    verify_answer,
)
from schemas import ExclusionRecord, ManifestRow, Request
from schemas.verification import VerificationRow


class RequestFacts(Protocol):
    """What a row takes from a request's manifest (or, streaming, from its prompt message).

    A manifest also gives its `run_id` (a prompt message carries none): the row belongs
    to the run it checks, read with `getattr`, since a Protocol attribute cannot be
    optional."""

    request_id: str
    tenant_id: str
    event_time: datetime | None
    builder_version: str
    config_hash: str | None


@dataclass(frozen=True)
class Multiplicity:
    """Where an answer stands among the answers for its request (`VerificationRow` fields)."""

    duplicate: bool = False
    answers_for_request: int | None = None


def _identity(answer: Answer, multiplicity: Multiplicity) -> dict[str, Any]:
    return {
        "answer_key": answer.key,
        "answer_file": answer.file,
        "answer_line": answer.line,
        "answer_sha256": hashlib.sha256(answer.text.encode("utf-8")).hexdigest(),
        "duplicate": multiplicity.duplicate,
        "answers_for_request": multiplicity.answers_for_request,
        "answer_format": answer.answer_format,
        "stop_reason": answer.stop_reason,
    }


def unverified_row(
    answer: Answer,
    status: str,
    error: str | None,
    manifest: RequestFacts | None = None,
    multiplicity: Multiplicity = Multiplicity(),
) -> VerificationRow:
    """A row for an answer that was not checked: an API failure, or no packet to check it by."""
    return VerificationRow(
        request_id=manifest.request_id if manifest else None,
        tenant_id=manifest.tenant_id if manifest else None,
        event_time=manifest.event_time if manifest else None,
        **_identity(answer, multiplicity),
        status=status,  # type: ignore[arg-type]
        error=error,
        passed=None,
        sentences=0,
        cited_sentences=0,
        labels_cited=[],
        checks=[],
        failed_checks=[],
        builder_version=manifest.builder_version if manifest else None,
        config_hash=manifest.config_hash if manifest else None,
        run_id=getattr(manifest, "run_id", None),
    )


def packet_of(
    manifest: ManifestRow,
    prompt: PromptText,
    request: Request | None,
    exclusions: Iterable[ExclusionRecord],
) -> GivenPacket:
    """The packet a request's answers are checked against."""
    own = {e.evidence_id for e in manifest.evidence} | {e.document_id for e in manifest.evidence}
    own |= {f for e in manifest.evidence for f in e.derived_from}
    excluded: dict[str, str] | None = None
    if request is not None:
        texts = {c.evidence_id: c.text for c in request.candidates}
        excluded = {
            x.evidence_id: texts[x.evidence_id]
            for x in exclusions
            if x.reason in GATE_REASONS and x.evidence_id in texts
        }
    return GivenPacket(
        request_id=manifest.request_id,
        blocks={e.label: prompt.blocks.get(e.label, "") for e in manifest.evidence},
        given=prompt.given,
        conflicts=tuple(tuple(c.labels) for c in manifest.conflicts if len(c.labels) >= 2),
        uncovered=tuple(manifest.uncovered_facets),
        own_ids=frozenset(own),
        excluded=excluded,
    )


def verified_row(
    answer: Answer,
    manifest: RequestFacts,
    packet: GivenPacket,
    run_ids: frozenset[str],
    multiplicity: Multiplicity = Multiplicity(),
    settings: CheckSettings = DEFAULTS,
) -> VerificationRow:
    verdict = verify_answer(answer.text, packet, run_ids, settings=settings)
    return VerificationRow(
        request_id=manifest.request_id,
        tenant_id=manifest.tenant_id,
        event_time=manifest.event_time,
        **_identity(answer, multiplicity),
        scope=settings.scope,
        status="succeeded",
        error=None,
        passed=verdict.passed,
        sentences=verdict.sentences,
        cited_sentences=verdict.cited_sentences,
        labels_cited=verdict.labels_cited,
        checks=verdict.checks,
        failed_checks=verdict.failed,
        builder_version=manifest.builder_version,
        config_hash=manifest.config_hash,
        run_id=getattr(manifest, "run_id", None),
    )
