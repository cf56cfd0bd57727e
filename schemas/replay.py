"""Replay rows: one per request of a stored run, re-packed and compared."""

from typing import Literal

from pydantic import BaseModel, ConfigDict

ReplayStatus = Literal[
    "same",
    "prompt_differs",
    "manifest_differs",
    "exclusions_differ",
    "not_packed",
    "request_missing",
]


class ReplayRow(BaseModel):
    """Whether a stored packet is reproducible from its inputs, and what differs if not."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    request_id: str
    tenant_id: str
    status: ReplayStatus
    differences: list[str]
    """Manifest fields whose stored and replayed values differ (`prompt_sha256` first), then
    `prompt_line` and `exclusions` when the run folder's differ from the re-pack."""
    stored_prompt_sha256: str
    replayed_prompt_sha256: str | None
    detail: str
