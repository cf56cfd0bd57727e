"""The catalog join's parts: cheap keys, the Bloom filter, the fan-out, and the mode choice."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packer.catalog_slice import canonical_line, request_keys, slice_version
from pipelines.options.catalog import SIDE_INPUT_MAX_BYTES, choose_catalog_mode
from tests.factories import candidate, document, request
from transforms.catalog.join import fan_out, line_key, referenced_rows
from transforms.catalog.key_filter import BuildKeyFilter, KeyFilter

ids = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=12)


@given(tenant=ids, doc_id=ids, extra=st.dictionaries(st.sampled_from(["x", "meta"]), ids))
def test_line_key_reads_the_top_level_ids_of_any_line(tenant, doc_id, extra) -> None:
    row = {"tenant_id": tenant, "document_id": doc_id, **extra}
    if extra:  # a nested object repeating the names must not be read as the key
        row["meta"] = {"tenant_id": "other", "document_id": "other"}
    for line in (json.dumps(row), json.dumps(row, ensure_ascii=False, indent=1)):
        assert line_key(line.encode()) == (tenant, doc_id)


def test_line_key_of_a_line_without_a_usable_key_is_none() -> None:
    assert line_key(b"not json") is None
    assert line_key(b'{"tenant_id": "t1"}') is None
    assert line_key(b"[1, 2]") is None
    assert line_key(b'{"tenant_id": "t\xff", "document_id": "d1"}') is None


@given(st.lists(st.tuples(ids, ids), max_size=50), st.lists(st.tuples(ids, ids), max_size=50))
def test_the_key_filter_never_loses_an_added_key(first, second) -> None:
    combine = BuildKeyFilter()
    parts = []
    for keys in (first, second):
        acc = combine.create_accumulator()
        for key in keys:
            acc = combine.add_input(acc, key)
        parts.append(acc)
    merged = combine.extract_output(combine.merge_accumulators(parts))
    assert all(key in merged for key in first + second)


def test_the_key_filter_rejects_most_other_keys() -> None:
    admitted = KeyFilter()
    for i in range(10_000):
        admitted.add(("t1", f"d{i}"))
    false_positives = sum(("t2", f"d{i}") in admitted for i in range(10_000))
    assert false_positives < 10


def test_only_admitted_rows_are_kept() -> None:
    admitted = KeyFilter()
    admitted.add(("t1", "d1"))
    line = document("d1").model_dump_json().encode()
    assert list(referenced_rows(("cat.jsonl", line), admitted)) == [
        (("t1", "d1"), ("doc", ("cat.jsonl", line)))
    ]
    other = document("d2").model_dump_json().encode()
    assert list(referenced_rows(("cat.jsonl", other), admitted)) == []
    assert list(referenced_rows(("cat.jsonl", b"not json"), admitted)) == []


def test_a_hot_document_fans_out_once_per_citing_request() -> None:
    doc = document("d1")
    refs = [("ref", f"q{i}") for i in range(1000)]
    values = [*refs[:500], ("doc", ("cat.jsonl", doc.model_dump_json().encode())), *refs[500:]]
    out = list(fan_out((("t1", "d1"), values)))
    assert out == [(f"q{i}", canonical_line(doc)) for i in range(1000)]


def test_fan_out_of_an_unreferenced_or_unknown_key_is_empty_and_a_repeat_fails() -> None:
    line = document("d1").model_dump_json().encode()
    assert list(fan_out((("t1", "d1"), [("doc", ("cat.jsonl", line))]))) == []
    assert list(fan_out((("t1", "d1"), [("ref", "q1")]))) == []
    with pytest.raises(ValueError, match="twice"):
        list(fan_out((("t1", "d1"), [("doc", ("a", line)), ("doc", ("b", line))])))
    with pytest.raises(ValueError, match="another document"):
        list(fan_out((("t1", "d9"), [("doc", ("a", line)), ("ref", "q1")])))
    with pytest.raises(ValueError, match="bad document row"):
        list(fan_out((("t1", "d1"), [("doc", ("a", b'{"tenant_id": "t1"}')), ("ref", "q1")])))
    with pytest.raises(ValueError, match="invalid UTF-8 at byte 0"):
        list(fan_out((("t1", "d1"), [("doc", ("a", b"\xff")), ("ref", "q1")])))


def test_request_keys_are_distinct_tenant_scoped_and_the_version_is_order_free() -> None:
    req = request(
        candidate("e1", "d1"), candidate("e2", "d1"), candidate("e3", "d2", tenant_id="t9")
    )
    assert request_keys(req) == [("t1", "d1"), ("t1", "d2")]
    lines = [canonical_line(document("d1")), canonical_line(document("d2"))]
    assert slice_version(lines) == slice_version(reversed(lines)) != slice_version(lines[:1])


def test_auto_mode_broadcasts_small_catalogs_and_joins_large_ones() -> None:
    assert choose_catalog_mode("auto", 1000, False, streaming=False) == "side_input"
    assert choose_catalog_mode("auto", SIDE_INPUT_MAX_BYTES + 1, False, False) == "join"
    assert choose_catalog_mode("auto", None, False, streaming=False) == "join"
    assert choose_catalog_mode("auto", SIDE_INPUT_MAX_BYTES + 1, False, True) == "side_input"
    assert choose_catalog_mode("auto", 1000, True, streaming=False) == "bigtable"
    assert choose_catalog_mode("join", 1000, True, streaming=False) == "join"
