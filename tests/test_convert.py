"""`evpack convert`: files written by LangChain's and LlamaIndex's own serializers, JSON
arrays and pretty JSON, into requests the batch job packs as it packs the originals."""

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_core.load import dumps
from llama_index.core.schema import NodeRelationship, NodeWithScore, RelatedNodeInfo, TextNode

from packer.parsing.foreign_records import (
    CANDIDATE_KEYS,
    REQUEST_KEYS,
    Supplied,
    convert,
    record_line,
)
from packer.parsing.request_records import decode
from pipelines import convert as convert_command
from schemas import Candidate, Request
from tests.batch_run import SAMPLES, flags, read_outputs, run_test_pipeline
from tests.strategies import examples, requests

REQUEST_ONLY = ("request_id", "tenant_id", "question", "as_of", "facets", "history", "budget")
TOOL_FIELDS = {"text", "evidence_id"}


def _metadata(candidate: Candidate, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every candidate field but the ones the tool carries itself, as metadata."""
    data = candidate.model_dump(mode="json", exclude_none=True, exclude={"acl_snapshot"})
    return {k: v for k, v in data.items() if k not in TOOL_FIELDS and k not in drop}


def _request_metadata(request: Request) -> dict[str, Any]:
    """The request in metadata keys; its tenant apart from the candidate's own `tenant_id`."""
    data = request.model_dump(mode="json", exclude_none=True, include=set(REQUEST_ONLY))
    data["request_tenant_id"] = data.pop("tenant_id")
    return data | request.principal.model_dump(mode="json")


def langchain_document(
    candidate: Candidate,
    extra: dict[str, Any],
    with_id: bool = True,
    drop: tuple[str, ...] = (),
) -> Document:
    """The evidence id as the Document's id, or (`with_id` false) as a metadata key."""
    meta = _metadata(candidate, drop) | extra
    if not with_id:
        return Document(
            page_content=candidate.text, metadata=meta | {"evidence_id": candidate.evidence_id}
        )
    return Document(page_content=candidate.text, metadata=meta, id=candidate.evidence_id)


def llamaindex_node(candidate: Candidate, extra: dict[str, Any]) -> NodeWithScore:
    """Span as the node's offsets, score as NodeWithScore's, the document as its source node."""
    meta = _metadata(candidate, drop=("span", "retrieval_score", "document_id")) | extra
    span = candidate.span
    node = TextNode(
        id_=candidate.evidence_id,
        text=candidate.text,
        metadata=meta,
        start_char_idx=span.start if span else None,
        end_char_idx=span.end if span else None,
    )
    if candidate.document_id is not None:
        source = RelatedNodeInfo(node_id=candidate.document_id)
        node.relationships[NodeRelationship.SOURCE] = source
    return NodeWithScore(node=node, score=candidate.retrieval_score)


def _supplied(request: Request) -> Supplied:
    return Supplied(
        request_id=request.request_id,
        question=request.question,
        tenant_id=request.tenant_id,
        user_id=request.principal.user_id,
        groups=request.principal.groups,
        clearance=request.principal.clearance,
        as_of=request.as_of.isoformat() if request.as_of else None,
        facets=request.facets,
        history=request.history,
    )


@settings(max_examples=examples(60), deadline=None)
@given(
    request=requests(),
    tool=st.sampled_from(["langchain", "langchain_lc", "langchain_pairs", "llamaindex"]),
    container=st.sampled_from(["jsonl", "array", "pretty_array", "pretty_values"]),
    texts=st.lists(st.text(min_size=1, max_size=40), min_size=12, max_size=12),
)
def test_every_mapped_field_survives_conversion(
    request: Request, tool: str, container: str, texts: list[str]
) -> None:
    """The request rebuilt from its candidates as each tool serializes them, in each container,
    is the request (but for acl_snapshot, never trusted, and texts of any characters)."""
    candidates = [
        c.model_copy(update={"text": t, "text_sha256": None, "acl_snapshot": None})
        for c, t in zip(request.candidates, texts, strict=False)
    ]
    request = request.model_copy(update={"candidates": tuple(candidates), "budget": None})
    if tool == "llamaindex":
        values = [json.loads(llamaindex_node(c, {}).to_json()) for c in candidates]
    elif tool == "langchain_lc":
        values = [json.loads(dumps(langchain_document(c, {}))) for c in candidates]
    elif tool == "langchain_pairs":  # similarity_search_with_score's (Document, score) pairs
        values = [
            [
                json.loads(langchain_document(c, {}, drop=("retrieval_score",)).model_dump_json()),
                c.retrieval_score,
            ]
            for c in candidates
        ]
    else:
        values = [json.loads(langchain_document(c, {}).model_dump_json()) for c in candidates]
    data = {
        "jsonl": "".join(json.dumps(v) + "\n" for v in values),
        "array": json.dumps(values),
        "pretty_array": json.dumps(values, indent=2),
        "pretty_values": "\n".join(json.dumps(v, indent=2) for v in values),
    }[container]
    result = convert([("in.json", data.encode())], _supplied(request))
    assert result.dead_letters == []
    (record,) = result.records
    converted = Request.model_validate(record)
    # The tool's own id (Document.id, the node's id_) is the chunk id when metadata names none;
    # a candidate without a tenant is of the request's (the catalog still decides access).
    expected = [
        c.model_copy(
            update={
                "chunk_id": c.chunk_id or c.evidence_id,
                "tenant_id": c.tenant_id or request.tenant_id,
            }
        )
        for c in candidates
    ]
    assert converted.candidates == tuple(expected)
    assert converted.model_copy(update={"candidates": ()}) == request.model_copy(
        update={"candidates": ()}
    )


def test_metadata_names_the_request_so_one_file_holds_many(tmp_path: Path) -> None:
    """The sample requests, their candidates as one pretty-printed JSON array of LangChain
    Documents carrying the request in metadata, converted by the command, pack into the same
    prompts and manifests as the originals."""
    originals = []
    for line in (SAMPLES / "requests.jsonl").read_text().splitlines():
        try:
            originals.append(Request.model_validate_json(line))
        except ValueError:
            continue
    kept = {r.request_id: r for r in originals}  # one per id, as the batch job keeps one
    docs = [
        json.loads(langchain_document(c, _request_metadata(r), with_id=False).model_dump_json())
        for r in kept.values()
        for c in r.candidates
    ]
    source = tmp_path / "retrieved.json"
    source.write_text(json.dumps(docs, indent=2, ensure_ascii=False))
    converted = tmp_path / "requests.jsonl"
    assert convert_command.main([f"--input={source}", f"--output={converted}"]) == 0
    original = tmp_path / "original.jsonl"
    original.write_text("".join(r.model_dump_json(exclude_none=True) + "\n" for r in kept.values()))
    outs = []
    for path, name in ((original, "a"), (converted, "b")):
        run_test_pipeline(flags(path, tmp_path / name))
        outs.append(read_outputs(tmp_path / name))
    a, b = outs
    for rows in ("prompts", "manifests", "exclusions"):
        assert _sorted(getattr(a, rows)) == _sorted(getattr(b, rows)), rows
    assert len(b.prompts) == len(kept) and b.dead_letters == []


def _sorted(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


def test_what_cannot_be_converted_is_a_dead_letter_with_its_reason() -> None:
    doc = json.loads(Document(page_content="Refunds take 30 days.", metadata={}).model_dump_json())
    node = json.loads(NodeWithScore(node=TextNode(text="Also.", id_="n1"), score=0.5).to_json())
    lines = [json.dumps(doc), "{broken", json.dumps({"foo": 1}), json.dumps(node)]
    data = "\n".join(lines).encode()
    result = convert([("in.jsonl", data)], Supplied())
    errors = [d.error for d in result.dead_letters]
    assert result.records == []
    assert errors[0].startswith("invalid JSON") and "LangChain Document" in errors[1]
    missing = "no request_id, question, tenant_id, user_id: pass --request_id, --question"
    assert sum(missing in e for e in errors) == 2 and all(
        d.stage == "convert" for d in result.dead_letters
    )
    supplied = Supplied(request_id="q1", question="How long?", tenant_id="acme", user_id="ana")
    result = convert([("in.jsonl", data)], supplied)
    (record,) = result.records
    assert [c["text"] for c in record["candidates"]] == ["Refunds take 30 days.", "Also."]
    assert len(result.dead_letters) == 2
    assert result.missing["revision_id"] == 2 and result.missing["chunk_id or span"] == 1
    text = "Refunds take 30 days."
    both = json.dumps(doc | {"metadata": {"question": "Other?"}})
    result = convert([("x", (json.dumps(doc) + "\n" + both).encode())], supplied)
    assert {d.error for d in result.dead_letters} == {
        "items of request_id 'q1' disagree on question"
    }
    hashed = convert([("x", json.dumps(doc).encode())], replace(supplied, hash_text=True))
    assert (
        hashed.records[0]["candidates"][0]["text_sha256"]
        == hashlib.sha256(text.encode()).hexdigest()
    )


def test_the_batch_job_points_foreign_records_to_convert() -> None:
    doc = Document(page_content="Refunds take 30 days.", metadata={"source": "a.md"})
    node = NodeWithScore(node=TextNode(text="x", id_="n1"), score=0.5)
    cases = {
        doc.model_dump_json(): "a LangChain Document, not a request record: `evpack convert`",
        node.to_json(): "a LlamaIndex node, not a request record: `evpack convert`",
        json.dumps([{"request_id": "q"}]): "a JSON array of records? `evpack convert`",
        "{": "one line of pretty-printed JSON?",
        '  "request_id": "q1",': "one line of pretty-printed JSON?",
    }
    for line, hint in cases.items():
        letter = decode("f.jsonl", line.encode(), "auto", 1 << 20)
        assert hint in letter.error, (line, letter.error)  # type: ignore[union-attr]
    plain = decode("f.jsonl", b'{"request_id": "q"}', "auto", 1 << 20)
    assert "convert" not in plain.error  # type: ignore[union-attr]


def _json_lines(name: str) -> list[dict[str, Any]]:
    """The sample lines that are JSON objects (the samples hold malformed lines too)."""
    values = []
    for line in (SAMPLES / name).read_text().splitlines():
        try:
            values.append(json.loads(line))
        except ValueError:
            continue
    return [v for v in values if isinstance(v, dict)]


def test_our_own_records_in_an_array_or_pretty_json_pass_through() -> None:
    """Our records (nested and flat) in a JSON array or pretty-printed: unwrapped as they are."""
    nested = [r for r in _json_lines("requests.jsonl") if "candidates" in r]
    flat = [r for r in _json_lines("requests_flat.jsonl") if "evidence_id" in r]
    records = nested[:5] + flat[:5]
    for data in (
        json.dumps(records, indent=2),
        "\n".join(json.dumps(r, indent=4) for r in records),
    ):
        result = convert([("in.json", data.encode())], Supplied())
        assert result.records == records and result.dead_letters == []
        assert result.shapes == {"ours": len(records)}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
metadata_values = st.dictionaries(
    st.sampled_from([*CANDIDATE_KEYS, *REQUEST_KEYS, "request_tenant_id", "start_index", "x"]),
    json_values,
    max_size=6,
)
foreign_values = st.one_of(
    json_values,
    st.builds(
        lambda t, m, i: {"page_content": t, "metadata": m, "id": i},
        json_values,
        metadata_values,
        json_values,
    ),
    st.builds(
        lambda t, m, s: {"node": {"id_": "n", "text": t, "metadata": m}, "score": s},
        json_values,
        metadata_values,
        json_values,
    ),
    st.builds(
        lambda d, s: [{"page_content": d, "metadata": {}}, s], st.text(), st.floats(allow_nan=False)
    ),
)


def _items(value: Any) -> int:
    """How many items a top-level value holds: an array's (a [document, score] pair is one);
    a value holding a non-finite number is no strict JSON, so it is one unreadable item."""
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        return 1
    pair = isinstance(value, list) and len(value) == 2 and isinstance(value[0], dict)
    if isinstance(value, list) and not (pair and isinstance(value[1], int | float)):
        return len(value)
    return 1


@settings(max_examples=examples(300), deadline=None)
@given(
    values=st.lists(foreign_values, max_size=6),
    indent=st.sampled_from([None, 2]),
    who=st.booleans(),
)
def test_any_json_converts_or_is_a_dead_letter(
    values: list[Any], indent: int | None, who: bool
) -> None:
    """Total: whatever JSON values come in, nothing raises; every item ends once, passed on,
    a candidate of a written request, or a dead letter; every line written encodes as UTF-8
    (a lone surrogate of a passed-through record stays an escape)."""
    data = "\n".join(json.dumps(v, indent=indent) for v in values)
    supplied = Supplied("q", "Why?", "acme", "ana") if who else Supplied()
    result = convert([("in.jsonl", data.encode())], supplied)
    assert all(d.stage == "convert" for d in result.dead_letters)
    expected = sum(_items(v) for v in values)
    assert expected == result.shapes["ours"] + result.candidates + len(result.dead_letters)
    for record in result.records:
        record_line(record).encode("utf-8")


def test_the_command_writes_dead_letters_and_keeps_earlier_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = Document(page_content="Refunds take 30 days.", metadata={"source": "a.md"}, id="c1")
    source = tmp_path / "in.jsonl"
    source.write_text(doc.model_dump_json() + "\n{broken\n")
    out = tmp_path / "req.jsonl"
    who = ["--request_id=q1", "--question=How long?", "--tenant_id=acme", "--user_id=ana"]
    assert convert_command.main([f"--input={source}", f"--output={out}", *who]) == 0
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert Request.model_validate(record).candidates[0].source_url == "a.md"
    (letter,) = (tmp_path / "req.dead_letters.jsonl").read_text().splitlines()
    assert json.loads(letter)["stage"] == "convert"
    summary = capsys.readouterr().out
    assert "missing revision_id in 1 of 1 candidates" in summary
    assert convert_command.main([f"--input={source}", f"--output={out}", *who]) == 2
    assert "exists; pass --overwrite" in capsys.readouterr().err


def test_reading_resumes_at_the_next_value_after_one_that_does_not_parse() -> None:
    """The lines of a value that fails go with its dead letter; the next value of any kind
    (a scalar JSONL line too) is read on its own, so nothing is skipped unseen."""
    text = '[\n  Infinity,\n  null\n]\n1\n{"page_content": "x"}\n'
    result = convert([("in.jsonl", text.encode())], Supplied())
    payloads = [d.payload for d in result.dead_letters]
    assert payloads[:2] == ["[\n  Infinity,\n  null\n]", "1"]
    assert "Infinity is not a JSON number" in result.dead_letters[0].error
    assert result.shapes == {"langchain": 1}
