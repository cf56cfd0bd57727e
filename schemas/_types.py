"""Field types shared by the models, the checks every input string and number passes.

Also how a failed check reads (`describe_validation_error`), in dead letters and flag errors.
"""

import difflib
import re
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Field,
    Strict,
    StringConstraints,
    TypeAdapter,
    ValidationError,
)
from pydantic_core import InitErrorDetails

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


KNOWN_UNICODE = "strings_known_unicode"
"""Validation context key: every string of the input is already known to encode."""
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A JSON escape of a surrogate (`\\ud800`..`\\udfff`): the one way a string decoded from
UTF-8 JSON text can hold a lone surrogate (an escaped backslash before "ud8" also
matches: then every string is checked, as without the context)."""


def json_context(text: str) -> dict[str, bool] | None:
    """The validation context of a model read from the JSON `text` (valid Unicode, as
    strictly decoded UTF-8 is): without a surrogate escape in it, every string it
    holds encodes, and the per-model check (`unencodable`) can be skipped. It was
    38% of validating a 10-candidate request (22 models, each field looked at).
    """
    return None if _SURROGATE_ESCAPE.search(text) else {KNOWN_UNICODE: True}


def is_identifier(value: Any) -> bool:
    """Whether `value` may stand as an id in a sink: non-empty text that encodes, not too long."""
    return isinstance(value, str) and 0 < len(value) <= MAX_ID_CHARS and is_unicode(value)


_VALIDATOR_PREFIX = re.compile(r"^(?:Value error|Assertion failed), ")
"""What pydantic puts before the message a validator raised: noise to the user."""


def describe_validation_error(err: ValidationError, model: type[BaseModel] | None = None) -> str:
    """One line per problem, `field.path: message`: the form of dead letters and flag errors.

    A validator's own message is shown as it raised it (pydantic's `Value error, `
    prefix dropped), and a whole-record check without a field path reads as the
    message alone. With `model`, a misspelt key (`input_limt`) names the field of
    that model, or of the model nested at its path, it most likely meant.
    """
    parts = []
    for item in err.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in item["loc"])
        message = _VALIDATOR_PREFIX.sub("", item["msg"])
        if item["type"] == "extra_forbidden" and model is not None:
            message += _meant(model, item["loc"])
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)


def _meant(model: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    """`; did you mean <field>?` for the unknown key at `loc`, when a field is close."""
    fields: dict[str, Any] = model.model_fields
    for step in loc[:-1]:
        annotation = fields[step].annotation if step in fields else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return ""
        fields = annotation.model_fields
    close = difflib.get_close_matches(str(loc[-1]), list(fields), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def refuse_repeats(name: str, ids: Iterable[str]) -> None:
    """Raise ValueError naming the first id that appears a second time (evidence, revisions)."""
    seen: set[str] = set()
    for item in ids:
        if item in seen:
            raise ValueError(f"{name} {item!r} appears twice")
        seen.add(item)


def unencodable(fields: dict[str, Any]) -> list[InitErrorDetails]:
    """The errors of the strings (or tuples of strings) among `fields` that no sink could encode.

    One check over every field of an input model (its model validator), so a
    new field cannot forget it; each error reads as a failed check of that
    field would. Rejected: a `field_validator("*")`, one Python call per field
    (215 a 10-candidate request, 43% of its validation time).
    """
    errors: list[InitErrorDetails] = []
    for name, value in fields.items():
        if isinstance(value, str):
            if not (value.isascii() or is_unicode(value)):
                errors.append(_value_error(name, value, NOT_UNICODE))
        elif isinstance(value, tuple):
            bad = next(
                (i for i, v in enumerate(value) if isinstance(v, str) and not is_unicode(v)), None
            )
            if bad is not None:
                errors.append(_value_error(name, value, f"item {bad}: {NOT_UNICODE}"))
    return errors


def _value_error(name: str, value: Any, message: str) -> InitErrorDetails:
    return InitErrorDetails(
        type="value_error", loc=(name,), input=value, ctx={"error": ValueError(message)}
    )


_DATE_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}")


def _timestamp_text(value: Any) -> Any:
    """Refuse a timestamp that is not ISO 8601 text (or a datetime from a Parquet column).

    Pydantic would read a number, or a string of digits, as Unix time in
    seconds or in milliseconds depending on its size: `253402300800` (year
    10000 in seconds) would become a day of 1978. A producer's unit cannot be
    guessed, so only dates written out are taken.
    """
    if isinstance(value, date | datetime):
        return value
    if isinstance(value, str) and _DATE_TEXT.match(value):
        return value
    kind = type(value).__name__
    raise ValueError(
        f"a timestamp is ISO 8601 text such as 2026-07-01T00:00:00Z, not {kind} {repr(value)[:40]}"
    )


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


UtcDatetime = Annotated[
    datetime, Strict(False), BeforeValidator(_timestamp_text), AfterValidator(_as_utc)
]
"""A time: digits past the microsecond are cut (Python's datetime holds no more), so it
rounds toward the past: right for `as_of` and event times, where earlier fails closed."""

_SUB_MICROSECONDS = re.compile(r"(\.\d{6})(\d+)")
_NAIVE = TypeAdapter(datetime)


def _later_at_sub_microseconds(value: Any) -> Any:
    """A time written with digits past the microsecond, rounded up to the next microsecond.

    A revision effective 0.5 µs after `as_of` would otherwise be cut to the
    microsecond of `as_of` and taken as effective. Rounding up makes it "not
    yet effective" until `as_of` reaches the next microsecond: fail closed.
    Rejected: keeping nanoseconds beside each datetime (every comparison and
    sink would have to carry them, for a precision no producer means).
    """
    if not isinstance(value, str):
        return value
    found = _SUB_MICROSECONDS.search(value)
    if found is None or not found.group(2).strip("0"):
        return value
    try:
        cut = _NAIVE.validate_python(value[: found.end(1)] + value[found.end(2) :])
    except ValidationError:
        return value  # not a time: refused by the checks that follow, with their reason
    try:
        return cut + timedelta(microseconds=1)
    except OverflowError:
        raise ValueError(f"{value} is outside years 1..9999") from None


EffectiveDatetime = Annotated[
    datetime,
    Strict(False),
    BeforeValidator(_later_at_sub_microseconds),
    BeforeValidator(_timestamp_text),
    AfterValidator(_as_utc),
]
"""The time a revision takes effect: digits past the microsecond round it up, so that a
revision is never effective before it says it is (`UtcDatetime` rounds the other way)."""
MAX_ITEMS = 10_000
"""Items an input array may hold (the most candidates a request may carry)."""


def _few_items(value: Any) -> Any:
    """Refuse a longer array before its items are validated: a record of 4 MiB of `[1,1,...`
    where strings go would otherwise give two million errors (8 s, a 90 MB dead letter)."""
    if isinstance(value, list | tuple) and len(value) > MAX_ITEMS:
        raise ValueError(f"array of {len(value)} items, more than {MAX_ITEMS}")
    return value


T = TypeVar("T")
Items = Annotated[tuple[T, ...], Strict(False), BeforeValidator(_few_items)]
"""A JSON array: the one container strict models take as a list (see `schemas.request`),
of at most `MAX_ITEMS` items."""
NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]
Identifier = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS)]
Count = Annotated[int, Field(ge=0, le=INT64_MAX)]
"""A non-negative integer that fits the int64 columns it may be written to."""

SENSITIVITY_LEVELS: tuple[str, ...] = ("public", "internal", "confidential", "restricted")
"""Sensitivity labels, least to most sensitive; a principal's clearance is one of them."""
