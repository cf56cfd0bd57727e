"""Parsing and validation: every malformed record becomes one dead letter with its reason."""

import json
import random
import struct
from typing import Any

import apache_beam as beam
import pyarrow as pa
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that, equal_to

from packer.parsing.request_records import Entry, assemble, decode
from schemas import DeadLetter, Request
from tests.factories import candidate
from transforms.parquet_rows import parquet_records
from transforms.parse import ParseRequests


def _nested(request_id: str = "q1", **fields: Any) -> dict[str, Any]:
    record = {
        "request_id": request_id,
        "tenant_id": "t1",
        "principal": {"user_id": "u1", "groups": ["g1"]},
        "question": "How long is the refund window?",
        "as_of": "2026-07-01T00:00:00Z",
        "candidates": [
            candidate("e1").model_dump(mode="json"),
            candidate("e2").model_dump(mode="json"),
        ],
    }
    return {**record, **fields}


def _flat_rows(request_id: str = "q1") -> list[dict[str, Any]]:
    header = {k: v for k, v in _nested(request_id).items() if k != "candidates"}
    return [{**header, **c} for c in _nested(request_id)["candidates"]]


def _decode(record: Any, shape: str = "auto", limit: int = 1_000_000) -> Any:
    payload = record if isinstance(record, str) else json.dumps(record)
    return decode("in.jsonl", payload, shape, limit)  # type: ignore[arg-type]


def _entries(records: list[dict[str, Any]]) -> list[Entry]:
    decoded = [_decode(r) for r in records]
    assert all(isinstance(d, tuple) for d in decoded), decoded
    return [entry for _, entry in decoded]


def test_invalid_json_is_dead_lettered_at_parse() -> None:
    letter = _decode('{"request_id": "q1", "question": "trunc')
    assert isinstance(letter, DeadLetter)
    assert letter.stage == "parse" and letter.error.startswith("invalid JSON")
    assert letter.payload == '{"request_id": "q1", "question": "trunc'
    assert letter.source == "in.jsonl"


def test_non_object_and_missing_request_id_are_dead_lettered() -> None:
    array = _decode(["a", "b"])
    assert isinstance(array, DeadLetter) and "JSON object, got list" in array.error
    anonymous = _decode({k: v for k, v in _nested().items() if k != "request_id"})
    assert isinstance(anonymous, DeadLetter) and anonymous.error.startswith("request_id")


def test_enormous_record_is_dead_lettered_unparsed() -> None:
    huge = _nested(candidates=[candidate("e1", text="x" * 5000).model_dump(mode="json")])
    letter = _decode(huge, limit=4096)
    assert isinstance(letter, DeadLetter)
    assert letter.stage == "parse" and "exceeds --max_record_bytes=4096" in letter.error


def test_shape_is_decided_per_record_in_auto() -> None:
    assert _entries([_nested()])[0].shape == "nested"
    assert _entries(_flat_rows())[0].shape == "flat"
    neither = _decode({"request_id": "q1", "tenant_id": "t1"})
    assert isinstance(neither, DeadLetter) and "neither candidates" in neither.error


def test_missing_field_wrong_type_and_empty_candidates_fail_validation() -> None:
    cases = {
        "question": {k: v for k, v in _nested().items() if k != "question"},
        "history": _nested(history="sometimes"),
        "candidates.0.retrieval_score": _nested(
            candidates=[{**candidate("e1").model_dump(mode="json"), "retrieval_score": "high"}]
        ),
        "candidates": _nested(candidates=[]),
    }
    for field, record in cases.items():
        request, letters = assemble("q1", _entries([record]))
        assert request is None
        assert [x.stage for x in letters] == ["validate"]
        assert letters[0].error.startswith(f"{field}:"), letters[0].error
        assert letters[0].request_id == "q1"


def test_duplicate_request_id_keeps_one_whatever_the_order() -> None:
    records = [_nested(), _nested(question="Another wording?"), _nested()]
    kept_questions = set()
    for seed in range(4):
        shuffled = records[:]
        random.Random(seed).shuffle(shuffled)
        request, letters = assemble("q1", _entries(shuffled))
        assert isinstance(request, Request)
        kept_questions.add(request.question)
        assert [x.stage for x in letters] == ["dedupe", "dedupe"]
        assert all("duplicate request_id 'q1'" in x.error for x in letters)
        assert sum("an identical record was kept" in x.error for x in letters) in (0, 1)
    assert len(kept_questions) == 1


def test_invalid_duplicate_does_not_beat_a_valid_one() -> None:
    request, letters = assemble("q1", _entries([_nested(history="sometimes"), _nested()]))
    assert request is not None and request.request_id == "q1"
    assert [x.stage for x in letters] == ["validate"]


def test_flat_rows_group_into_one_request_in_any_order() -> None:
    rows = _flat_rows()
    forward, _ = assemble("q1", _entries(rows))
    backward, _ = assemble("q1", _entries(rows[::-1]))
    assert forward == backward
    assert forward is not None and [c.evidence_id for c in forward.candidates] == ["e1", "e2"]
    assert all(c.tenant_id == "t1" for c in forward.candidates)


def test_flat_rows_that_disagree_on_the_request_are_all_dead_lettered() -> None:
    rows = _flat_rows()
    rows[1] = {**rows[1], "question": "Something else?"}
    request, letters = assemble("q1", _entries(rows))
    assert request is None
    assert [x.stage for x in letters] == ["group", "group"]
    assert "disagree on request fields question" in letters[0].error


def test_flat_repeated_row_and_bad_candidate_row() -> None:
    rows = _flat_rows()
    bad = {**rows[1], "evidence_id": "e3", "retrieval_score": "high"}
    request, letters = assemble("q1", _entries([*rows, rows[0], bad]))
    assert request is not None and len(request.candidates) == 2
    assert sorted(x.stage for x in letters) == ["dedupe", "validate"]
    assert any(x.error.startswith("candidate: retrieval_score") for x in letters)


def test_a_request_id_in_both_shapes_is_dead_lettered() -> None:
    request, letters = assemble("q1", _entries([_nested(), *_flat_rows()]))
    assert request is None and len(letters) == 3
    assert all("both as a nested record and as flat rows" in x.error for x in letters)


def test_parse_transform_routes_requests_and_dead_letters() -> None:
    records = [
        ("a.jsonl", json.dumps(_nested("q1")).encode()),
        ("a.jsonl", b"not json"),
        ("b.jsonl", json.dumps(_nested("q1")).encode()),
        ("b.jsonl", json.dumps(_nested("q2")).encode()),
    ]
    with test_pipeline.TestPipeline(runner="FnApiRunner") as p:
        parsed = p | beam.Create(records) | ParseRequests()
        ids = parsed.requests | "Ids" >> beam.Map(lambda r: r.request_id)
        stages = parsed.dead_letters | "Stages" >> beam.Map(lambda d: (d.stage, d.source))
        assert_that(ids, equal_to(["q1", "q2"]), label="requests")
        # identical payloads: the tie breaks on the source name, so a.jsonl's copy is kept
        assert_that(stages, equal_to([("parse", "a.jsonl"), ("dedupe", "b.jsonl")]), label="dl")


def test_a_parquet_row_that_is_not_utf8_is_refused_and_its_neighbours_read(tmp_path) -> None:
    offsets = pa.py_buffer(struct.pack("<3i", 0, 2, 4))
    ids = pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(b"\xff\xfeq2")])
    table = pa.table({"request_id": ids, "tenant_id": ["t1", "t1"]})
    records = list(parquet_records("in.parquet", table))
    decoded = [decode(source, payload, "auto", 1 << 20) for source, payload in records]
    letters = [d for d in decoded if isinstance(d, DeadLetter) and d.request_id is None]
    assert [d.error for d in letters] == ["invalid UTF-8 at byte 16: invalid start byte"]
    assert letters[0].payload == '{"request_id": "\\xff\\xfe", "tenant_id": "t1"}'
    read = [json.loads(payload) for _, payload in records if b"q2" in payload]
    assert read == [{"request_id": "q2", "tenant_id": "t1"}]
