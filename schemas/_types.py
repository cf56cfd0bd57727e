"""Field types shared by the models."""

from datetime import UTC, datetime
from typing import Annotated

from pydantic import AfterValidator, StringConstraints


def _as_utc(value: datetime) -> datetime:
    """Naive timestamps are read as UTC so that every comparison is well defined."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


UtcDatetime = Annotated[datetime, AfterValidator(_as_utc)]
NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]

SENSITIVITY_LEVELS: tuple[str, ...] = ("public", "internal", "confidential", "restricted")
"""Sensitivity labels, least to most sensitive; a principal's clearance is one of them."""
