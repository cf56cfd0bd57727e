"""Builders of valid schema objects for tests: short calls, realistic defaults."""

import hashlib
from typing import Any

from schemas import Candidate, CatalogDocument, Principal, Request, Revision
from schemas.prompt_formats.base import OPENAI_FRAMING, Framing

AS_OF = "2026-07-01T00:00:00Z"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def candidate(
    evidence_id: str, document_id: str = "d1", text: str | None = None, **fields: Any
) -> Candidate:
    """A candidate with full provenance whose hash matches its text."""
    text = text if text is not None else f"Passage {evidence_id} about returns and refunds."
    values: dict[str, Any] = {
        "evidence_id": evidence_id,
        "tenant_id": "t1",
        "document_id": document_id,
        "revision_id": "r1",
        "chunk_id": f"c-{evidence_id}",
        "source_url": f"https://docs.example/{document_id}",
        "title": f"Title of {document_id}",
        "text": text,
        "retrieval_score": 0.5,
    }
    values.update(fields)
    if "text_sha256" not in fields:
        values["text_sha256"] = sha(text)
    return Candidate(**values)


def document(document_id: str = "d1", tenant_id: str = "t1", **fields: Any) -> CatalogDocument:
    """A catalog entry readable by group `support`, with one revision r1 in effect."""
    values: dict[str, Any] = {
        "tenant_id": tenant_id,
        "document_id": document_id,
        "allowed_groups": ("support",),
        "revisions": (Revision(revision_id="r1", effective_at="2026-01-01T00:00:00Z"),),
    }
    values.update(fields)
    return CatalogDocument(**values)


def request(*candidates: Candidate, **fields: Any) -> Request:
    """A request of tenant t1 by user u1 in group `support`."""
    values: dict[str, Any] = {
        "request_id": "q1",
        "tenant_id": "t1",
        "principal": Principal(user_id="u1", groups=("support",)),
        "question": "How long is the return window?",
        "as_of": AS_OF,
        "candidates": candidates,
    }
    values.update(fields)
    return Request(**values)


def encoded_prompt_tokens(encoding: Any, messages: Any, framing: Framing = OPENAI_FRAMING) -> int:
    """A prompt's tokens counted the slow, obvious way: every message encoded whole."""
    return framing.reply_priming + sum(
        framing.per_message
        + (len(encoding.encode_ordinary(m.role)) if framing.count_roles else 0)
        + len(encoding.encode_ordinary(m.content))
        for m in messages
    )
