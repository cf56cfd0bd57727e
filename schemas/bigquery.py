"""BigQuery table schemas derived from the pydantic models."""

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
