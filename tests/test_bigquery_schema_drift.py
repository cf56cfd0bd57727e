"""An older table's schema against this version's: what is added, relaxed, refused.

Pure over BigQuery's JSON schemas (`schemas.bigquery.schema_drift`); the emulator
test of the change in place is in `test_bigquery_io`.
"""

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schemas.bigquery import bigquery_schema, schema_drift
from schemas.tables import AUDIT_TABLES

SCHEMAS = {name: bigquery_schema(table.model) for name, table in AUDIT_TABLES.items()}


def _paths(schema: list[dict[str, Any]], prefix: str = "") -> set[str]:
    out = set()
    for field in schema:
        out.add(prefix + field["name"])
        out |= _paths(field.get("fields", []), prefix + field["name"] + ".")
    return out


@st.composite
def older(draw: st.DrawFn, schema: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`schema` as an older version may have made it: fields dropped at any depth (never
    all of a record's), names in another case, types by their standard SQL names."""
    dropped = draw(st.lists(st.booleans(), min_size=len(schema), max_size=len(schema)))
    if all(dropped):
        dropped[draw(st.integers(0, len(schema) - 1))] = False
    out = []
    for field, drop in zip(schema, dropped, strict=True):
        if drop:
            continue
        kept = dict(field)
        if draw(st.booleans()):
            kept["name"] = field["name"].upper()
        kept["type"] = {"INTEGER": "INT64", "FLOAT": "FLOAT64", "BOOLEAN": "BOOL"}.get(
            field["type"], field["type"]
        )
        if "fields" in field:
            kept["fields"] = draw(older(field["fields"]))
        out.append(kept)
    return out


@given(st.sampled_from(sorted(SCHEMAS)).flatmap(lambda n: st.tuples(st.just(n), older(SCHEMAS[n]))))
def test_an_older_table_gets_exactly_the_missing_columns_and_then_is_up_to_date(
    case: tuple[str, list[dict[str, Any]]],
) -> None:
    name, old = case
    wanted = SCHEMAS[name]
    drift = schema_drift(old, wanted)
    assert drift.conflicts == ()
    assert drift.relaxed == ()  # nothing required here that this version may leave empty
    missing = {p.lower() for p in _paths(wanted)} - {p.lower() for p in _paths(old)}
    outermost = {p for p in missing if not any(p.startswith(q + ".") for q in missing)}
    assert {p.lower() for p in drift.added} == outermost  # a new record brings its fields
    assert {p.lower() for p in _paths(drift.schema)} == {p.lower() for p in _paths(wanted)}
    assert not _required(drift.schema, drift.added)
    assert drift.changed == bool(drift.added)
    again = schema_drift(drift.schema, wanted)
    assert not again.changed and again.schema == drift.schema


def _required(schema: list[dict[str, Any]], added: tuple[str, ...], prefix: str = "") -> bool:
    """Whether a field under one of the `added` paths is REQUIRED (BigQuery refuses those)."""
    for field in schema:
        path = prefix + field["name"]
        fresh = any(path == a or path.startswith(a + ".") for a in added)
        if fresh and field["mode"] == "REQUIRED":
            return True
        if _required(field.get("fields", []), added, path + "."):
            return True
    return False


def _field(name: str, kind: str, mode: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "type": kind, "mode": mode, **more}


def test_a_required_column_this_version_never_writes_or_may_leave_empty_is_relaxed() -> None:
    wanted = [_field("a", "STRING", "REQUIRED"), _field("b", "STRING", "NULLABLE")]
    table = [
        _field("a", "STRING", "REQUIRED"),
        _field("b", "STRING", "REQUIRED", description="kept"),
        _field("legacy", "INTEGER", "REQUIRED"),
    ]
    drift = schema_drift(table, wanted)
    assert drift.relaxed == ("b", "legacy")
    assert drift.schema == [
        _field("a", "STRING", "REQUIRED"),
        _field("b", "STRING", "NULLABLE", description="kept"),
        _field("legacy", "INTEGER", "NULLABLE"),
    ]


@pytest.mark.parametrize(
    ("table", "conflict"),
    [
        (
            [_field("n", "STRING", "NULLABLE")],
            "n is NULLABLE STRING in the table, REQUIRED INTEGER",
        ),
        ([_field("n", "INTEGER", "REPEATED")], "n is REPEATED INTEGER in the table"),
        (
            [_field("r", "RECORD", "NULLABLE", fields=[_field("x", "BOOL", "NULLABLE")])],
            "r.x is NULLABLE BOOLEAN in the table, NULLABLE STRING here",
        ),
        (  # named as the table has it, not as relaxing would leave it
            [_field("r", "RECORD", "NULLABLE", fields=[_field("x", "BOOL", "REQUIRED")])],
            "r.x is REQUIRED BOOLEAN in the table, NULLABLE STRING here",
        ),
    ],
)
def test_a_column_of_another_type_or_shape_is_a_conflict_named_by_its_path(
    table: list[dict[str, Any]], conflict: str
) -> None:
    wanted = [
        _field("n", "INTEGER", "REQUIRED"),
        _field("r", "RECORD", "NULLABLE", fields=[_field("x", "STRING", "NULLABLE")]),
    ]
    [found] = schema_drift(table, wanted).conflicts
    assert found.startswith(conflict)
