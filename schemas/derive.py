"""Walk a pydantic model into a neutral field tree that Arrow and BigQuery render.

One walker, two renderers: the storage schemas can never drift from the models.
"""

import types
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

Kind = Literal["string", "int", "float", "bool", "timestamp", "record"]

_SCALARS: dict[type, Kind] = {
    str: "string",
    int: "int",
    float: "float",
    bool: "bool",
    datetime: "timestamp",
}


@dataclass(frozen=True)
class FieldSpec:
    """A storage-neutral column: its kind, whether it may be null or repeats."""

    name: str
    kind: Kind
    nullable: bool
    repeated: bool
    children: tuple["FieldSpec", ...] = ()


def _unwrap(annotation: Any) -> tuple[Any, bool, bool]:
    """Strip Optional and list/tuple wrappers; return (inner type, nullable, repeated)."""
    nullable = False
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unions other than Optional are not storable: {annotation}")
        nullable = True
        annotation = args[0]
        origin = get_origin(annotation)
    if getattr(annotation, "__metadata__", None) is not None:  # Annotated[...]
        annotation = get_args(annotation)[0]
        origin = get_origin(annotation)
    if origin in (list, tuple):
        inner = get_args(annotation)[0]
        inner_type, _, _ = _unwrap(inner)
        return inner_type, nullable, True
    return annotation, nullable, False


def _kind(annotation: Any) -> Kind:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "record"
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "string"
    if get_origin(annotation) is Literal:
        return "string"
    for python_type, kind in _SCALARS.items():
        if annotation is python_type:
            return kind
    raise TypeError(f"no storage type for {annotation!r}")


def model_fields(model: type[BaseModel]) -> tuple[FieldSpec, ...]:
    """The storage-neutral columns of a model, in declaration order."""
    specs = []
    for name, info in model.model_fields.items():
        inner, nullable, repeated = _unwrap(info.annotation)
        kind = _kind(inner)
        children = model_fields(inner) if kind == "record" else ()
        specs.append(FieldSpec(name, kind, nullable and not repeated, repeated, children))
    return tuple(specs)
