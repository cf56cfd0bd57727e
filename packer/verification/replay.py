"""Audit replay: is a stored packet what its inputs, catalog and config give today?

A request is re-packed at the event time its manifest recorded (so `as_of`
and revision choice are the stored ones), and everything of it the run folder
holds is compared with what the re-pack gives: the manifest field by field,
the prompt line byte for byte, and the exclusions row by row. Each mismatch
is named. The manifest's `prompt_sha256` alone is not enough: it vouches for
the prompt the packer made, not for the line a reader finds in the folder (a
figure edited in a stored prompt line replayed as `same`).
A stored prompt line is matched to its request by the key its format names it
by (`answer_keys`), so the check does not depend on how the lines were
sharded. Rejected: comparing prompt files whole (sharding and order differ
between runs while every line is the same).
"""

from collections.abc import Sequence

from packer.verification.answers import AnswerError, parse_prompt_line
from schemas import ExclusionRecord, ManifestRow, Request
from schemas.replay import ReplayRow, ReplayStatus
from schemas.run import RUN_FIELDS

PROMPT_LINE = "prompt_line"
EXCLUSIONS = "exclusions"


def replayable(request: Request, manifest: ManifestRow) -> Request:
    """The request as the run packed it: without its own event time it took the run's."""
    if request.event_time is not None:
        return request
    return request.model_copy(update={"event_time": manifest.event_time})


def line_key(line: str) -> str | None:
    """The key a stored prompt line names its request by, or None for a line of no format."""
    try:
        return parse_prompt_line(line).key
    except AnswerError:
        return None


def _line_mismatch(stored: Sequence[str] | None, replayed: str | None) -> str | None:
    """Why the stored prompt lines of a request are not the re-packed one (None: they are).

    `stored` is None when the run folder holds no prompt files (prompts went to a topic).
    """
    if stored is None or replayed is None:
        return None
    if not stored:
        return "no stored prompt line for it in the run folder"
    if len(stored) > 1:
        return f"{len(stored)} stored prompt lines for it"
    if stored[0] != replayed:
        at = next(
            (i for i, (a, b) in enumerate(zip(stored[0], replayed, strict=False)) if a != b),
            min(len(stored[0]), len(replayed)),
        )
        return f"the stored prompt line differs from the re-packed one from character {at}"
    return None


def _exclusion_mismatch(
    stored: Sequence[ExclusionRecord] | None, replayed: Sequence[ExclusionRecord]
) -> str | None:
    """Which evidence ids' exclusions differ (None: the same rows; `stored` None: not stored)."""
    if stored is None:
        return None
    old = {e.evidence_id: e.model_dump(exclude=RUN_FIELDS) for e in stored}
    new = {e.evidence_id: e.model_dump(exclude=RUN_FIELDS) for e in replayed}
    differing = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
    if len(stored) != len(old):
        differing = sorted({*differing, "(an evidence id excluded twice)"})
    if not differing:
        return None
    shown = ", ".join(differing[:5]) + (" ..." if len(differing) > 5 else "")
    return f"exclusions differ for {len(differing)} evidence ids: {shown}"


def compare(
    stored: ManifestRow,
    replayed: ManifestRow | None,
    detail: str = "",
    *,
    lines: tuple[Sequence[str] | None, str | None] = (None, None),
    exclusions: tuple[Sequence[ExclusionRecord] | None, Sequence[ExclusionRecord]] = (None, ()),
) -> ReplayRow:
    """The replay row of one request: `same`, or what differs, or why none was packed.

    `lines` and `exclusions` are (stored, re-packed) pairs; a stored side of None
    means the run folder does not hold them. `differences` names the manifest
    fields that differ (`prompt_sha256` first), then `prompt_line` and
    `exclusions` when the stored ones differ from the re-pack; `detail` says how.
    """
    if replayed is None:
        return _unreplayed(stored, "not_packed", detail)
    old, new = stored.model_dump(exclude=RUN_FIELDS), replayed.model_dump(exclude=RUN_FIELDS)
    differences = sorted((k for k in old if old[k] != new[k]), key=lambda k: k != "prompt_sha256")
    notes = [detail] if detail else []
    for name, why in (
        (PROMPT_LINE, _line_mismatch(*lines)),
        (EXCLUSIONS, _exclusion_mismatch(*exclusions)),
    ):
        if why is not None:
            differences.append(name)
            notes.append(f"{name}: {why}")
    status: ReplayStatus = "same"
    if "prompt_sha256" in differences or PROMPT_LINE in differences:
        status = "prompt_differs"
    elif EXCLUSIONS in differences and len(differences) == 1:
        status = "exclusions_differ"
    elif differences:
        status = "manifest_differs"
    return ReplayRow(
        request_id=stored.request_id,
        tenant_id=stored.tenant_id,
        status=status,
        differences=differences,
        stored_prompt_sha256=stored.prompt_sha256,
        replayed_prompt_sha256=replayed.prompt_sha256,
        detail="; ".join(notes),
    )


def missing(stored: ManifestRow) -> ReplayRow:
    """The row of a stored request whose input record is not among the given inputs."""
    return _unreplayed(stored, "request_missing", "no valid input record with this request_id")


def stray_line(key: str | None, line: str) -> ReplayRow:
    """The row of a stored prompt line that names no request of the run's manifests."""
    named = key if key is not None else line[:80]
    return ReplayRow(
        request_id=named,
        tenant_id="",
        status="prompt_differs",
        differences=[PROMPT_LINE],
        stored_prompt_sha256="",
        replayed_prompt_sha256=None,
        detail=(
            f"{PROMPT_LINE}: a stored prompt line "
            + ("of no prompt format" if key is None else f"names {key!r}, no request of the run")
        ),
    )


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
