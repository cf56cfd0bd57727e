"""BigQuery table schemas derived from the pydantic models."""

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from schemas.derive import FieldSpec, model_fields

_BQ_TYPES = {
    "string": "STRING",
    "int": "INTEGER",
    "float": "FLOAT",
    "bool": "BOOLEAN",
    "timestamp": "TIMESTAMP",
    "record": "RECORD",
}


def _bq_field(spec: FieldSpec) -> dict[str, Any]:
    mode = "REPEATED" if spec.repeated else "NULLABLE" if spec.nullable else "REQUIRED"
    field: dict[str, Any] = {"name": spec.name, "type": _BQ_TYPES[spec.kind], "mode": mode}
    if spec.children:
        field["fields"] = [_bq_field(c) for c in spec.children]
    return field


def bigquery_schema(model: type[BaseModel]) -> list[dict[str, Any]]:
    """The table schema of a model as BigQuery's JSON representation (`fields`)."""
    return [_bq_field(spec) for spec in model_fields(model)]


_TYPE_ALIASES = {"INT64": "INTEGER", "FLOAT64": "FLOAT", "BOOL": "BOOLEAN", "STRUCT": "RECORD"}
"""The standard SQL names BigQuery may report a legacy-named column type by."""


@dataclass(frozen=True)
class SchemaDrift:
    """An existing table's schema against the one this version writes (`bigquery_schema`).

    `schema` is the table's own schema (its order, its extra columns and
    descriptions kept) with what this version needs that BigQuery changes in
    place: a missing column (dotted path in `added`) added NULLABLE or
    REPEATED, and a REQUIRED column relaxed to NULLABLE (`relaxed`) where this
    version may write no value. `conflicts` names what no in-place change
    mends: a column of another type, or repeated on one side only. Rejected:
    leaving an older table alone, which turned every row this version writes
    into a dead letter ("no such field") until someone altered the table.
    """

    schema: list[dict[str, Any]]
    added: tuple[str, ...] = ()
    relaxed: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        """Whether `schema` differs from the table's."""
        return bool(self.added or self.relaxed)


def schema_drift(existing: list[dict[str, Any]], wanted: list[dict[str, Any]]) -> SchemaDrift:
    """How the table schema `existing` stands against `wanted` (both as BigQuery's JSON)."""
    notes = _Notes([], [], [])
    merged = _merged(existing, wanted, "", notes)
    return SchemaDrift(merged, tuple(notes.added), tuple(notes.relaxed), tuple(notes.conflicts))


@dataclass(frozen=True)
class _Notes:
    added: list[str]
    relaxed: list[str]
    conflicts: list[str]


def _merged(
    existing: list[dict[str, Any]], wanted: list[dict[str, Any]], prefix: str, notes: _Notes
) -> list[dict[str, Any]]:
    ours = {f["name"].lower(): f for f in wanted}  # column names ignore case in BigQuery
    out = []
    for column in existing:
        field, path = dict(column), prefix + column["name"]
        mine = ours.pop(field["name"].lower(), None)
        out.append(field)
        mode = field.get("mode") or "NULLABLE"
        if mode == "REQUIRED" and (mine is None or mine["mode"] == "NULLABLE"):
            field["mode"] = "NULLABLE"  # a value this version never writes, or may leave null
            notes.relaxed.append(path)
        if mine is None:
            continue
        if _type(field) != _type(mine) or (mode == "REPEATED") != (mine["mode"] == "REPEATED"):
            notes.conflicts.append(f"{path} is {_shape(column)} in the table, {_shape(mine)} here")
        elif _type(mine) == "RECORD":
            field["fields"] = _merged(field.get("fields") or [], mine["fields"], path + ".", notes)
    for mine in ours.values():
        notes.added.append(prefix + mine["name"])
        out.append(_addable(mine))
    return out


def _type(field: dict[str, Any]) -> str:
    kind = str(field["type"]).upper()
    return _TYPE_ALIASES.get(kind, kind)


def _shape(field: dict[str, Any]) -> str:
    return f"{field.get('mode') or 'NULLABLE'} {_type(field)}"


def _addable(field: dict[str, Any]) -> dict[str, Any]:
    """`field` as a column BigQuery adds to an existing table: never REQUIRED."""
    out = dict(field, mode="REPEATED" if field["mode"] == "REPEATED" else "NULLABLE")
    if "fields" in field:
        out["fields"] = [_addable(child) for child in field["fields"]]
    return out
