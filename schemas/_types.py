"""Field types shared by the models, the checks every input string and number passes.

Also how a failed check reads (`describe_validation_error`), in dead letters and flag errors.
"""

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, Field, StringConstraints, ValidationError

INT64_MAX = 2**63 - 1
MAX_ID_CHARS = 256
"""Ids travel as Pub/Sub attributes (at most 1,024 bytes): 256 characters always fit."""

NOT_UNICODE = "not valid Unicode text (a lone surrogate such as \\ud800 cannot be encoded as UTF-8)"


def is_unicode(text: str) -> bool:
    """Whether `text` encodes as UTF-8: only lone surrogates (from `\\ud800` escapes) do not."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def is_identifier(value: Any) -> bool:
    """Whether `value` may stand as an id in a sink: non-empty text that encodes, not too long."""
    return isinstance(value, str) and 0 < len(value) <= MAX_ID_CHARS and is_unicode(value)


def describe_validation_error(err: ValidationError) -> str:
    """One line per problem, `field.path: message`: the form of dead letters and flag errors."""
    parts = []
    for item in err.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in item["loc"]) or "record"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


def encodable(value: Any) -> Any:
    """Refuse a string (or a tuple of strings) that no sink could encode; pass anything else.

    One check for every string field of an input model (its `field_validator("*")`),
    so a new field cannot forget it.
    """
    if isinstance(value, str):
        if not is_unicode(value):
            raise ValueError(NOT_UNICODE)
    elif isinstance(value, tuple):
        for i, item in enumerate(value):
            if isinstance(item, str) and not is_unicode(item):
                raise ValueError(f"item {i}: {NOT_UNICODE}")
    return value


def _as_utc(value: datetime) -> datetime:
    """Naive timestamps are read as UTC so that every comparison is well defined.

    An offset that moves the time out of years 1..9999 (9999-12-31T23:00-05:00)
    is a validation error, not an overflow later.
    """
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{value.isoformat()} is outside years 1..9999 in UTC") from None


UtcDatetime = Annotated[datetime, AfterValidator(_as_utc)]
NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]
Identifier = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS)]
Count = Annotated[int, Field(ge=0, le=INT64_MAX)]
"""A non-negative integer that fits the int64 columns it may be written to."""

SENSITIVITY_LEVELS: tuple[str, ...] = ("public", "internal", "confidential", "restricted")
"""Sensitivity labels, least to most sensitive; a principal's clearance is one of them."""
