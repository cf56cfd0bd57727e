"""Request records -> validated requests and dead letters: the parsing, as plain functions.

Every input record ends in exactly one place: inside one packed request, or in a
dead letter that keeps its raw payload, the error, the stage and its source.

Two record shapes are accepted:
- nested: one request per record, with its `candidates` list;
- flat: one candidate per record, carrying the request fields; records are
  grouped by `request_id` and must agree on every request field.
In `auto` shape a record with `candidates` is nested, one with `evidence_id` flat.

Duplicate `request_id`s within a run (a request retried upstream, two files
overlapping): one record is kept, the one whose payload has the smallest
SHA-256, so the choice does not depend on file order, splitting or workers;
every other record with that id is dead-lettered at stage `dedupe`. In flat
shape, an exact repeat of a row is dead-lettered the same way.

No Beam here: the batch transforms (`transforms.parse`), the streaming ones
(`transforms.stream_parse`) and the tests call these functions. Rejected
homes: `packer/`, whose functions decide a prompt from requests already
trusted, and which the benchmarks use without any parsing; `schemas/`, which
would then import the JSON limits of `packer.parsing.strict_json` and the builder
version of `packer`, below which the data contract sits.
"""

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from packer.parsing.dead_letters import dead_letter
from packer.parsing.foreign_records import FOREIGN_NAMES, HINT, foreign_shape
from packer.parsing.names import InputShape
from packer.parsing.strict_json import Refused, Unreadable, decode_text, loads
from schemas import Candidate, DeadLetter, Request
from schemas._types import NOT_UNICODE, describe_validation_error, is_unicode, json_context

REQUEST_FIELDS = frozenset(Request.model_fields) - {"candidates"}
CANDIDATE_FIELDS = frozenset(Candidate.model_fields) - {"tenant_id"}

Shape = Literal["nested", "flat"]
PRETTY_HINT = f"one line of pretty-printed JSON? records are one per line; {HINT}"


@dataclass(frozen=True)
class Entry:
    """One decoded record on its way to grouping by request_id."""

    shape: Shape
    sha256: str
    source: str
    payload: str


def decode(
    source: str, payload: bytes | str | Unreadable, shape: InputShape, max_record_bytes: int
) -> tuple[str, Entry] | DeadLetter:
    """Check size, encoding, JSON and shape of one record and key it by its request_id.

    Total: every payload becomes an entry or a `parse` dead letter (limits in
    `packer.parsing.strict_json`). The request_id must be text that encodes, as it
    keys the grouping.
    """
    raw = payload.encode("utf-8", errors="surrogatepass") if isinstance(payload, str) else payload
    text = decode_text(raw, max_record_bytes)
    if isinstance(text, Refused):
        return dead_letter("parse", text.reason, text.text, source, None)
    record = loads(text)
    if isinstance(record, Refused):
        reason = record.reason + (f" ({PRETTY_HINT})" if _pretty_line(text) else "")
        return dead_letter("parse", reason, record.text, source, None)
    if not isinstance(record, dict):
        kind = type(record).__name__
        error = f"record must be a JSON object, got {kind}"
        if kind == "list":
            error += f" (a JSON array of records? {HINT})"
        return dead_letter("parse", error, text, source, None)
    request_id = record.get("request_id")
    if not isinstance(request_id, str) or not request_id:
        error = _foreign("request_id: missing or not a non-empty string", record)
        return dead_letter("parse", error, text, source, None)
    if not is_unicode(request_id):
        return dead_letter("parse", f"request_id: {NOT_UNICODE}", text, source, None)
    record_shape = _shape_of(record, shape)
    if record_shape is None:
        error = _foreign(
            "record has neither candidates (nested shape) nor evidence_id (flat shape)", record
        )
        return dead_letter("parse", error, text, source, request_id)
    digest = hashlib.sha256(raw).hexdigest()
    return request_id, Entry(record_shape, digest, source, text)


def _foreign(error: str, record: dict[str, Any]) -> str:
    """The reason a record is no request, naming the tool that wrote it when it is known."""
    foreign = foreign_shape(record)
    if foreign is not None:
        return f"a {FOREIGN_NAMES[foreign]}, not a request record: {HINT}"
    return error


def _pretty_line(text: str) -> bool:
    """Whether a refused line looks like a piece of pretty-printed JSON (a brace alone, a key)."""
    line = text.strip()
    return line in ("{", "[", "}", "]", "},", "],") or (line.startswith('"') and '":' in line)


def _shape_of(record: dict[str, Any], shape: InputShape) -> Shape | None:
    if shape != "auto":
        return shape
    if "candidates" in record:
        return "nested"
    if "evidence_id" in record:
        return "flat"
    return None


def assemble(request_id: str, entries: Iterable[Entry]) -> tuple[Request | None, list[DeadLetter]]:
    """All records of one request_id become one validated request and dead letters."""
    ordered = sorted(entries, key=lambda e: (e.sha256, e.source))
    shapes = {e.shape for e in ordered}
    if len(shapes) > 1:
        error = (
            f"request_id {request_id!r} appears both as a nested record and as flat rows; "
            "send each request in one shape"
        )
        return None, [_letter(e, "dedupe", error, request_id) for e in ordered]
    if ordered[0].shape == "nested":
        return _assemble_nested(request_id, ordered)
    return _assemble_flat(request_id, ordered)


def _assemble_nested(
    request_id: str, ordered: list[Entry]
) -> tuple[Request | None, list[DeadLetter]]:
    letters: list[DeadLetter] = []
    kept: tuple[Entry, Request] | None = None
    for entry in ordered:
        try:
            request = Request.model_validate(
                json.loads(entry.payload), context=json_context(entry.payload)
            )
        except ValidationError as err:
            letters.append(_letter(entry, "validate", describe_validation_error(err), request_id))
            continue
        if kept is None:
            kept = (entry, request)
            continue
        same = "an identical" if entry.sha256 == kept[0].sha256 else "a different"
        error = (
            f"duplicate request_id {request_id!r}: {same} record was kept "
            f"(payload sha256 {kept[0].sha256[:16]} from {kept[0].source})"
        )
        letters.append(_letter(entry, "dedupe", error, request_id))
    return (kept[1] if kept else None), letters


@dataclass(frozen=True)
class _FlatRow:
    """A flat record split into its request fields and its candidate."""

    entry: Entry
    header: dict[str, Any]
    candidate: Candidate

    @property
    def canonical_header(self) -> str:
        return json.dumps(self.header, sort_keys=True)


def _assemble_flat(
    request_id: str, ordered: list[Entry]
) -> tuple[Request | None, list[DeadLetter]]:
    letters: list[DeadLetter] = []
    rows: list[_FlatRow] = []
    seen: set[str] = set()
    for entry in ordered:
        if entry.sha256 in seen:
            error = f"duplicate row of request_id {request_id!r}: an identical row was kept"
            letters.append(_letter(entry, "dedupe", error, request_id))
            continue
        seen.add(entry.sha256)
        record = json.loads(entry.payload)
        fields = {k: v for k, v in record.items() if k in CANDIDATE_FIELDS}
        try:
            candidate = Candidate.model_validate(
                {**fields, "tenant_id": record.get("tenant_id")},
                context=json_context(entry.payload),
            )
        except ValidationError as err:
            error = f"candidate: {describe_validation_error(err)}"
            letters.append(_letter(entry, "validate", error, request_id))
            continue
        header = {k: v for k, v in record.items() if k in REQUEST_FIELDS}
        rows.append(_FlatRow(entry, header, candidate))
    if not rows:
        return None, letters
    if len({row.canonical_header for row in rows}) > 1:
        differing = sorted(
            k for k in REQUEST_FIELDS if len({json.dumps(r.header.get(k)) for r in rows}) > 1
        )
        error = (
            f"flat rows of request_id {request_id!r} disagree on request fields "
            f"{', '.join(differing)}; every row must carry the same request"
        )
        return None, letters + [_letter(r.entry, "group", error, request_id) for r in rows]
    rows.sort(key=lambda r: (r.candidate.evidence_id, r.entry.sha256))
    try:
        request = Request.model_validate(
            {**rows[0].header, "candidates": [r.candidate for r in rows]},
            context=json_context(rows[0].entry.payload),
        )
    except ValidationError as err:
        error = describe_validation_error(err)
        return None, letters + [_letter(r.entry, "validate", error, request_id) for r in rows]
    return request, letters


def _letter(entry: Entry, stage: str, error: str, request_id: str) -> DeadLetter:
    return dead_letter(stage, error, entry.payload, entry.source, request_id)


# A stream, one record at a time: each is a whole request (nested shape), and
# keyed state lets the first of a request_id through (`transforms.stream_parse`).


def parse_record(
    source: str, payload: bytes | str, max_record_bytes: int
) -> tuple[str, tuple[Entry, Request]] | list[DeadLetter]:
    """One record as (request_id, (entry, request)), or the dead letters saying why not."""
    decoded = decode(source, payload, "nested", max_record_bytes)
    if isinstance(decoded, DeadLetter):
        return [decoded]
    request_id, entry = decoded
    request, letters = assemble(request_id, [entry])
    if request is None:
        return letters
    return request_id, (entry, request)


REMEMBERED = "before the job (re)started: its manifest is written"


def duplicate_letter(request_id: str, entry: Entry, kept: str) -> DeadLetter:
    """The dead letter of a later copy of a request_id already let through."""
    if kept == REMEMBERED:
        error = f"duplicate request_id {request_id!r}: a record was packed {REMEMBERED}"
    else:
        same = "an identical" if kept.startswith(entry.sha256[:16]) else "a different"
        error = (
            f"duplicate request_id {request_id!r}: {same} record was packed (payload sha256 {kept})"
        )
    return dead_letter("dedupe", error, entry.payload, entry.source, request_id)
