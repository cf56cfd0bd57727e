"""Audit replay: is a stored packet what its inputs, catalog and config give today?

A request is re-packed at the event time its manifest recorded (so `as_of`
and revision choice are the stored ones) and the two manifests are compared
field by field; the prompt is compared through `prompt_sha256`, which hashes
its messages. Rejected: comparing prompt files byte for byte (the prompt
format and sharding may differ between runs while the packet is the same).
"""

from schemas import ManifestRow, Request
from schemas.replay import ReplayRow, ReplayStatus


def replayable(request: Request, manifest: ManifestRow) -> Request:
    """The request as the run packed it: without its own event time it took the run's."""
    if request.event_time is not None:
        return request
    return request.model_copy(update={"event_time": manifest.event_time})


def compare(stored: ManifestRow, replayed: ManifestRow | None, detail: str = "") -> ReplayRow:
    """The replay row of one request: `same`, or which fields differ, or why none was packed."""
    if replayed is None:
        return _unreplayed(stored, "not_packed", detail)
    old, new = stored.model_dump(), replayed.model_dump()
    differences = sorted((k for k in old if old[k] != new[k]), key=lambda k: k != "prompt_sha256")
    if "prompt_sha256" in differences:
        status = "prompt_differs"
    elif differences:
        status = "manifest_differs"
    else:
        status = "same"
    return ReplayRow(
        request_id=stored.request_id,
        tenant_id=stored.tenant_id,
        status=status,
        differences=differences,
        stored_prompt_sha256=stored.prompt_sha256,
        replayed_prompt_sha256=replayed.prompt_sha256,
        detail=detail,
    )


def missing(stored: ManifestRow) -> ReplayRow:
    """The row of a stored request whose input record is not among the given inputs."""
    return _unreplayed(stored, "request_missing", "no valid input record with this request_id")


def _unreplayed(stored: ManifestRow, status: ReplayStatus, detail: str) -> ReplayRow:
    return ReplayRow(
        request_id=stored.request_id,
        tenant_id=stored.tenant_id,
        status=status,
        differences=[],
        stored_prompt_sha256=stored.prompt_sha256,
        replayed_prompt_sha256=None,
        detail=detail,
    )
