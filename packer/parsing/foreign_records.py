"""Other tools' retrieval results -> our request records (`evpack convert`), as plain functions.

Read shapes, each as the tool's own serializer writes it:
- LangChain `Document`: `doc.model_dump_json()` (`{id, metadata, page_content,
  type: Document}`), or `langchain_core.load.dumpd/dumps` (`{lc, type:
  constructor, id: [..., Document], kwargs: {...}}`), or a `[document, score]`
  pair as `similarity_search_with_score` returns them;
- LlamaIndex `NodeWithScore` (`to_json()`/`to_dict()`: `{node: {id_, text,
  metadata, relationships, start_char_idx, end_char_idx, ...}, score}`) or a
  bare `TextNode`;
- our own records (nested requests, flat rows), passed through unchanged.

Containers: JSONL, a JSON array, one pretty-printed JSON value, or pretty
values one after another (`jq .` output), told apart by reading values one by
one (`json.JSONDecoder.raw_decode`) with the strictness of record parsing
(`packer.parsing.strict_json`: no key twice, no NaN). A value that does not parse
is a dead letter holding the text up to the next line opening a value at its
first column, where reading resumes.

Where our fields come from (`CANDIDATE_KEYS`, `REQUEST_KEYS`; docs/input.md,
"Other tools' results"): a candidate's fields from the item's metadata
under our field names or the tools' conventions, then the tool's own fields
(LlamaIndex node id, source document, character offsets and score); the
request's fields from the caller (`Supplied`, the flags), overridden per item
by metadata keys of the same names, so one file may hold the results of many
questions. Nothing is invented: provenance the input lacks stays missing, and
the packer excludes such candidates as `missing_provenance`; only the text's
SHA-256 may be computed here, when the caller says so (`hash_text`), as it
then proves only that the text was not changed after conversion.

Items of one request are grouped in input order into one nested request,
validated here so a problem is named at conversion, not at packing. Rejected:
flat rows out (one per item), which cannot carry a candidate's tenant apart
from the request's, and would defer every error to the batch job.
"""

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from packer.parsing.dead_letters import dead_letter
from packer.parsing.strict_json import STRICT_DECODER, Refused, decode_text
from schemas import DeadLetter, Request
from schemas._types import describe_validation_error, is_unicode

STAGE = "convert"
HINT = (
    "`evpack convert` turns LangChain Documents, LlamaIndex nodes, JSON arrays and "
    "pretty-printed JSON into request records (README, Bringing your own data)"
)
FOREIGN_NAMES = {"langchain": "LangChain Document", "llamaindex": "LlamaIndex node"}

CANDIDATE_KEYS: dict[str, tuple[str, ...]] = {
    "evidence_id": ("evidence_id",),
    "tenant_id": ("tenant_id",),
    "document_id": ("document_id", "doc_id"),
    "revision_id": ("revision_id",),
    "chunk_id": ("chunk_id",),
    "source_url": ("source_url", "source", "url", "file_path"),
    "title": ("title",),
    "section": ("section",),
    "effective_at": ("effective_at",),
    "span": ("span",),
    "text_sha256": ("text_sha256",),
    "retrieval_score": ("retrieval_score", "score"),
    "rerank_score": ("rerank_score", "relevance_score"),
    "query_facets": ("query_facets",),
    "authority": ("authority",),
    "sensitivity": ("sensitivity",),
}
"""Our candidate field <- the metadata keys tried in order. `source` is where LangChain's
loaders put the file or URL, `file_path` LlamaIndex's readers, `relevance_score` LangChain's
rerankers. Then, when still missing: evidence_id and chunk_id <- the tool's id (LlamaIndex
`id_`, LangChain `Document.id`), document_id <- LlamaIndex's source node, span <- LlamaIndex
`start_char_idx`/`end_char_idx` or LangChain's `start_index` (+ the text's length),
retrieval_score <- `NodeWithScore.score` or the pair's score."""

REQUEST_KEYS = (
    "request_id",
    "question",
    "user_id",
    "groups",
    "clearance",
    "as_of",
    "event_time",
    "facets",
    "history",
    "budget",
)
"""Request fields an item's metadata may set (over the flags). The request's tenant is the
flag's, else metadata `request_tenant_id`: metadata `tenant_id` is the candidate's own
(the corpus owner's), which need not be the asker's. A candidate without one is of the
request's tenant (the catalog still decides what the principal may see)."""
REQUEST_TENANT_KEY = "request_tenant_id"
PRINCIPAL_KEYS = ("user_id", "groups", "clearance")

MISSING_CHECKED = ("document_id", "revision_id", "source_url", "text_sha256")
"""The provenance a candidate needs (`packer.gates`) that the tools' shapes do not carry."""


@dataclass(frozen=True)
class Supplied:
    """What the caller supplies for every converted request: who asks, what, for which tenant."""

    request_id: str | None = None
    question: str | None = None
    tenant_id: str | None = None
    user_id: str | None = None
    groups: tuple[str, ...] = ()
    clearance: str | None = None
    as_of: str | None = None
    facets: tuple[str, ...] = ()
    history: bool = False
    hash_text: bool = False


@dataclass(frozen=True)
class Item:
    """One retrieved passage in another tool's shape, reduced to what we read of it."""

    shape: str
    text: Any
    metadata: dict[str, Any]
    tool_id: Any = None
    document_id: Any = None
    span: dict[str, int] | None = None
    score: Any = None


@dataclass
class Conversion:
    """What a conversion gave: request records, passed-through records and dead letters."""

    records: list[dict[str, Any]] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    shapes: Counter[str] = field(default_factory=Counter)
    missing: Counter[str] = field(default_factory=Counter)
    candidates: int = 0


def read_values(text: str, source: str) -> Iterator[Any | DeadLetter]:
    """Every JSON value of a text, the items of a top-level array (not a pair) one by one."""
    at, end = 0, len(text)
    while True:
        while at < end and text[at] in " \t\r\n":
            at += 1
        if at == end:
            return
        try:
            value, next_at = STRICT_DECODER.raw_decode(text, at)
        except (ValueError, RecursionError) as err:
            resume = _next_value_line(text, at)
            skipped = text[at:resume].rstrip()
            yield dead_letter(STAGE, f"invalid JSON: {err}", skipped, source, None)
            at = resume
            continue
        at = next_at
        if isinstance(value, list) and not _is_pair(value):
            yield from value
        else:
            yield value


def _next_value_line(text: str, at: int) -> int:
    """The start of the next line that opens a value at its first column, or the end.

    Any value may open there (a scalar line of JSONL too); an indented line, or one
    closing a bracket, belongs to the value that failed. Everything skipped goes
    with that value's dead letter. Rejected: resuming only at `{` or `[` (the
    scalar lines between were skipped without a trace)."""
    while (at := text.find("\n", at)) >= 0:
        at += 1
        if text[at : at + 1] not in ("", " ", "\t", "\r", "\n", "]", "}", ","):
            return at
    return len(text)


def foreign_shape(value: Any) -> str | None:
    """The tool whose serializer wrote `value` (`langchain`, `llamaindex`), or None."""
    item = _item(value)
    return item.shape if item is not None else None


def _is_pair(value: list[Any]) -> bool:
    """A `[document, score]` pair, as LangChain's `similarity_search_with_score` returns."""
    return len(value) == 2 and isinstance(value[0], dict) and isinstance(value[1], int | float)


def _item(value: Any) -> Item | None:
    if isinstance(value, list) and _is_pair(value):
        pair = _item(value[0])
        return None if pair is None or pair.score is not None else _scored(pair, value[1])
    if not isinstance(value, dict):
        return None
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), dict):
        value = value["kwargs"]
    if "page_content" in value:
        metadata = _metadata(value)
        start, text = metadata.get("start_index"), value["page_content"]
        span = _span(start, start + len(text)) if _is_int(start) and isinstance(text, str) else None
        return Item("langchain", text, metadata, value.get("id"), span=span)
    if isinstance(value.get("node"), dict):
        node = _item(value["node"])
        return None if node is None else _scored(node, value.get("score"))
    if "id_" in value and ("text" in value or "text_resource" in value):
        text = value.get("text", (value.get("text_resource") or {}).get("text"))
        source = (value.get("relationships") or {}).get("1")
        document = source.get("node_id") if isinstance(source, dict) else None
        span = _span(value.get("start_char_idx"), value.get("end_char_idx"))
        return Item("llamaindex", text, _metadata(value), value["id_"], document, span)
    return None


def _scored(item: Item, score: Any) -> Item:
    return Item(
        item.shape, item.text, item.metadata, item.tool_id, item.document_id, item.span, score
    )


def _metadata(value: dict[str, Any]) -> dict[str, Any]:
    metadata = value.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _span(start: Any, end: Any) -> dict[str, int] | None:
    return {"start": start, "end": end} if _is_int(start) and _is_int(end) else None


def _is_ours(value: Any) -> bool:
    return isinstance(value, dict) and ("candidates" in value or "evidence_id" in value)


def _first(metadata: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((metadata[k] for k in keys if metadata.get(k) is not None), None)


def _candidate(item: Item, ordinal: int, hash_text: bool) -> dict[str, Any]:
    """Our candidate fields of one item (`CANDIDATE_KEYS`); absent ones are left out."""
    found = {name: _first(item.metadata, keys) for name, keys in CANDIDATE_KEYS.items()}
    text_hash = hashlib.sha256(str(item.text).encode("utf-8", "surrogatepass")).hexdigest()
    fallbacks = {
        "evidence_id": item.tool_id or f"ev-{text_hash[:16]}-{ordinal}",
        "chunk_id": item.tool_id,
        "document_id": item.document_id,
        "span": item.span,
        "retrieval_score": item.score,
        "text_sha256": text_hash if hash_text else None,
    }
    for name, value in fallbacks.items():
        if found[name] is None:
            found[name] = value
    return {"text": item.text} | {k: v for k, v in found.items() if v is not None}


def _request_fields(item: Item, supplied: Supplied) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "request_id": supplied.request_id,
        "question": supplied.question,
        "user_id": supplied.user_id,
        "groups": list(supplied.groups),
        "clearance": supplied.clearance,
        "as_of": supplied.as_of,
        "event_time": None,
        "facets": list(supplied.facets),
        "history": supplied.history,
        "budget": None,
    }
    fields |= {k: item.metadata[k] for k in REQUEST_KEYS if item.metadata.get(k) is not None}
    fields["tenant_id"] = supplied.tenant_id or item.metadata.get(REQUEST_TENANT_KEY)
    return fields


def _request(fields: dict[str, Any], candidates: list[dict[str, Any]]) -> dict[str, Any]:
    """Our nested request record; a field nobody supplied is left to its default."""
    set_ = {k: v for k, v in fields.items() if v is not None}
    record = {k: v for k, v in set_.items() if k not in PRINCIPAL_KEYS}
    record["principal"] = {k: v for k, v in set_.items() if k in PRINCIPAL_KEYS}
    record["candidates"] = [{"tenant_id": fields["tenant_id"]} | c for c in candidates]
    return record


_NEEDED = {
    "request_id": "request_id",
    "question": "question",
    "tenant_id": REQUEST_TENANT_KEY,
    "user_id": "user_id",
}
"""The request fields no default stands for, and the metadata key that may set each."""


def record_line(record: dict[str, Any]) -> str:
    """A record as one JSON line: UTF-8 as read, or escaped where it would not encode.

    A record passed through is not validated here, and may hold a lone surrogate
    (`"\\ud800"` in the input); written escaped, the batch job refuses it with the reason.
    """
    line = json.dumps(record, ensure_ascii=False)
    return line if is_unicode(line) else json.dumps(record)


def convert(files: Iterable[tuple[str, bytes]], supplied: Supplied) -> Conversion:
    """Every value of every (source, bytes) file: a request record, passed on, or a dead letter."""
    out = Conversion()
    groups: dict[str, list[tuple[str, Any, Item, dict[str, Any]]]] = {}
    for source, data in files:
        text = decode_text(data)
        if isinstance(text, Refused):
            out.dead_letters.append(dead_letter(STAGE, text.reason, text.text, source, None))
            continue
        for value in read_values(text, source):
            if isinstance(value, DeadLetter):
                out.dead_letters.append(value)
            elif _is_ours(value):
                out.shapes["ours"] += 1
                out.records.append(value)
            elif (item := _item(value)) is None:
                out.dead_letters.append(_unknown(value, source))
            else:
                out.shapes[item.shape] += 1
                fields = _request_fields(item, supplied)
                groups.setdefault(str(fields["request_id"]), []).append(
                    (source, value, item, fields)
                )
    for members in groups.values():
        _assemble(members, supplied.hash_text, out)
    return out


def _unknown(value: Any, source: str) -> DeadLetter:
    keys = sorted(value)[:8] if isinstance(value, dict) else type(value).__name__
    error = (
        f"not a LangChain Document, a LlamaIndex node or one of our request records (keys: {keys})"
    )
    return dead_letter(STAGE, error, json.dumps(value, ensure_ascii=False), source, None)


def _assemble(
    members: list[tuple[str, Any, Item, dict[str, Any]]], hash_text: bool, out: Conversion
) -> None:
    """One request of the items that name it, validated; else every item a dead letter."""
    fields = members[0][3]
    request_id = fields["request_id"]
    error = None
    missing = [name for name in _NEEDED if fields[name] is None]
    differ = sorted({k for *_, f in members for k in f if f[k] != fields[k]})
    if missing:
        flags = ", ".join(f"--{name}" for name in missing)
        keys = ", ".join(_NEEDED[name] for name in missing)
        error = f"no {', '.join(missing)}: pass {flags} or set the metadata keys {keys}"
    elif differ:
        error = f"items of request_id {request_id!r} disagree on {', '.join(differ)}"
    seen: Counter[str] = Counter()
    candidates = []
    for _, _, item, _ in members:
        ordinal = seen[str(item.text)]
        seen[str(item.text)] += 1
        candidates.append(_candidate(item, ordinal, hash_text))
    record = _request(fields, candidates)
    if error is None:
        try:
            Request.model_validate(record)
        except ValidationError as err:
            error = describe_validation_error(err)
    if error is not None:
        for source, value, _, _ in members:
            payload = json.dumps(value, ensure_ascii=False)
            out.dead_letters.append(dead_letter(STAGE, error, payload, source, request_id))
        return
    out.records.append(record)
    out.candidates += len(candidates)
    for candidate in record["candidates"]:
        out.missing.update(name for name in MISSING_CHECKED if name not in candidate)
        if "chunk_id" not in candidate and "span" not in candidate:
            out.missing["chunk_id or span"] += 1
