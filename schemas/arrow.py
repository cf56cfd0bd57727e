"""Arrow schemas derived from the pydantic models (for Parquet)."""

import pyarrow as pa
from pydantic import BaseModel

from schemas.derive import FieldSpec, model_fields

_ARROW_TYPES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "int": pa.int64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
    "timestamp": pa.timestamp("us", tz="UTC"),
}


def _arrow_field(spec: FieldSpec) -> pa.Field:
    if spec.kind == "record":
        value_type: pa.DataType = pa.struct([_arrow_field(c) for c in spec.children])
    else:
        value_type = _ARROW_TYPES[spec.kind]
    if spec.repeated:
        return pa.field(spec.name, pa.list_(pa.field("item", value_type, nullable=False)), False)
    return pa.field(spec.name, value_type, nullable=spec.nullable)


def arrow_schema(model: type[BaseModel]) -> pa.Schema:
    """The Arrow schema of a model's rows."""
    return pa.schema([_arrow_field(spec) for spec in model_fields(model)])
