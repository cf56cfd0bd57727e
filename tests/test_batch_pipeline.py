"""End to end on samples/: the invariants, checked row by row on the files written."""

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from packer import load_encoding
from schemas import CatalogDocument, Request
from schemas.outputs import RenderedMessage
from tests.batch_run import (
    SAMPLES,
    Outputs,
    flags,
    input_lines,
    read_outputs,
    run_test_pipeline,
)
from tests.factories import encoded_prompt_tokens

LABEL = re.compile(r"^<(E\d+)[ >]", re.MULTILINE)


@pytest.fixture(scope="module")
def nested(tmp_path_factory: pytest.TempPathFactory) -> Outputs:
    out = tmp_path_factory.mktemp("nested")
    run_test_pipeline(flags(SAMPLES / "requests.jsonl", out))
    return read_outputs(out)


@pytest.fixture(scope="module")
def requests() -> dict[str, Request]:
    """The requests of samples/requests.jsonl that the job keeps (valid, deduplicated)."""
    kept: dict[str, Request] = {}
    for line in input_lines(SAMPLES / "requests.jsonl"):
        try:
            request = Request.model_validate_json(line)
        except ValueError:
            continue
        kept.setdefault(request.request_id, request)
    return kept


@pytest.fixture(scope="module")
def catalog() -> dict[tuple[str, str], CatalogDocument]:
    docs = [
        CatalogDocument.model_validate_json(line) for line in input_lines(SAMPLES / "catalog.jsonl")
    ]
    return {(d.tenant_id, d.document_id): d for d in docs}


def test_every_input_record_is_a_request_or_a_dead_letter(nested: Outputs) -> None:
    records = input_lines(SAMPLES / "requests.jsonl")
    assert len(nested.manifests) + len(nested.dead_letters) == len(records)
    assert len(nested.prompts) == len(nested.manifests) > 0
    assert {p["request_id"] for p in nested.prompts} == {m["request_id"] for m in nested.manifests}
    payloads = Counter(d["payload"] for d in nested.dead_letters)
    assert all(payloads[line] >= 1 for line in records if line in payloads)


def test_conservation_per_request(nested: Outputs, requests: dict[str, Request]) -> None:
    excluded = Counter(x["request_id"] for x in nested.exclusions)
    for manifest in nested.manifests:
        request = requests[manifest["request_id"]]
        packed = sum(1 + len(e["derived_from"]) for e in manifest["evidence"])
        assert manifest["candidates_in"] == len(request.candidates)
        assert packed + excluded[manifest["request_id"]] == len(request.candidates)
        assert sum(r["count"] for r in manifest["excluded"]) == excluded[manifest["request_id"]]
        placed = [e["evidence_id"] for e in manifest["evidence"]]
        placed += [d for e in manifest["evidence"] for d in e["derived_from"]]
        placed += [
            x["evidence_id"] for x in nested.exclusions if x["request_id"] == request.request_id
        ]
        assert sorted(placed) == sorted(c.evidence_id for c in request.candidates)


def test_exclusion_counts_sum_the_exclusion_rows(nested: Outputs) -> None:
    rows = Counter((x["tenant_id"], x["reason"]) for x in nested.exclusions)
    counted = {(c["tenant_id"], c["reason"]): c["count"] for c in nested.counts}
    assert counted == dict(rows)
    assert all(c["window_start"] is None and c["window_end"] is None for c in nested.counts)


def test_isolation(
    nested: Outputs,
    requests: dict[str, Request],
    catalog: dict[tuple[str, str], CatalogDocument],
) -> None:
    prompts = {p["request_id"]: p for p in nested.prompts}
    foreign_seen = 0
    for manifest in nested.manifests:
        request = requests[manifest["request_id"]]
        tenant, principal = request.tenant_id, request.principal
        by_id = {c.evidence_id: c for c in request.candidates}
        assert manifest["tenant_id"] == tenant == prompts[request.request_id]["tenant_id"]
        for evidence in manifest["evidence"]:
            doc = catalog[(tenant, evidence["document_id"])]
            assert not doc.deleted
            assert principal.user_id in doc.allowed_users or set(principal.groups) & set(
                doc.allowed_groups
            )
            assert by_id[evidence["evidence_id"]].tenant_id == tenant
        user = _user_message(prompts[request.request_id])
        for cand in request.candidates:
            if cand.tenant_id != tenant:
                foreign_seen += 1
                assert cand.text not in user
    for row in nested.exclusions:
        assert row["tenant_id"] == requests[row["request_id"]].tenant_id
    assert foreign_seen > 0, "the samples must carry cross-tenant candidates"


def test_budget_is_exact_and_respected(nested: Outputs) -> None:
    encoding = load_encoding("cl100k_base")
    manifests = {m["request_id"]: m for m in nested.manifests}
    for prompt in nested.prompts:
        messages = [RenderedMessage.model_validate(m) for m in prompt["messages"]]
        counted = encoded_prompt_tokens(encoding, messages)
        budget = manifests[prompt["request_id"]]["budget"]
        assert counted == prompt["prompt_tokens"] == budget["prompt_tokens"]
        assert counted + budget["reserved_answer"] <= budget["input_limit"]


def test_labels_in_prompt_equal_labels_in_manifest(nested: Outputs) -> None:
    manifests = {m["request_id"]: m for m in nested.manifests}
    for prompt in nested.prompts:
        evidence = manifests[prompt["request_id"]]["evidence"]
        in_prompt = LABEL.findall(_user_message(prompt))
        assert in_prompt == [e["label"] for e in evidence]
        assert in_prompt == [f"E{i}" for i in range(1, len(in_prompt) + 1)]
        assert [(x["label"], x["evidence_id"]) for x in prompt["label_map"]] == [
            (e["label"], e["evidence_id"]) for e in evidence
        ]


def test_injection_text_stays_inside_its_block(nested: Outputs) -> None:
    hostile = [p for p in nested.prompts if "Ignore all previous instructions" in _user_message(p)]
    assert hostile, "the samples must carry the prompt-injection passage"
    for prompt in hostile:
        user = _user_message(prompt)
        assert user.count("</E") == len(prompt["label_map"])
        assert "<system>" not in user and "&lt;/E1&gt;&lt;/evidence&gt;" in user


def test_dead_letters_say_why(nested: Outputs) -> None:
    stages = Counter(d["stage"] for d in nested.dead_letters)
    assert stages == {"parse": 2, "validate": 3, "dedupe": 1}
    for letter in nested.dead_letters:
        assert letter["error"] and letter["payload"]
        assert letter["source"].endswith("requests.jsonl")


def test_nested_parquet_gives_the_nested_prompts(nested: Outputs, tmp_path: Path) -> None:
    records = []  # the valid records (Parquet cannot hold the malformed ones), duplicate included
    for line in input_lines(SAMPLES / "requests.jsonl"):
        try:
            Request.model_validate_json(line)
        except ValueError:
            continue
        records.append(json.loads(line))
    path = tmp_path / "nested.parquet"
    pq.write_table(pa.Table.from_struct_array(pa.array(records)), path)
    run_test_pipeline(flags(path, tmp_path / "out"))
    from_parquet = read_outputs(tmp_path / "out")
    assert [d["stage"] for d in from_parquet.dead_letters] == ["dedupe"]
    assert from_parquet.prompts == nested.prompts


def test_flat_jsonl_and_parquet_give_the_nested_prompts(nested: Outputs, tmp_path: Path) -> None:
    rows = [json.loads(line) for line in input_lines(SAMPLES / "requests_flat.jsonl")]
    flat_parquet = tmp_path / "flat.parquet"
    # pa.array infers the columns from every row (from_pylist only reads the first)
    pq.write_table(pa.Table.from_struct_array(pa.array(rows)), flat_parquet)
    for name, path in (("jsonl", SAMPLES / "requests_flat.jsonl"), ("parquet", flat_parquet)):
        out = tmp_path / name
        run_test_pipeline(flags(path, out, "--input_shape=flat"))
        flat = read_outputs(out)
        assert not flat.dead_letters
        assert sum(m["candidates_in"] for m in flat.manifests) == len(rows)
        assert [p["messages"] for p in flat.prompts] == [p["messages"] for p in nested.prompts]


def _user_message(prompt: dict[str, Any]) -> str:
    return next(m["content"] for m in prompt["messages"] if m["role"] == "user")
