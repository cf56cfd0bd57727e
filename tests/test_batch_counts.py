"""Exclusion counts per (tenant, reason): whole run in the global window, per fixed window."""

from datetime import UTC, datetime

import apache_beam as beam
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.window import FixedWindows, TimestampedValue

from schemas import ExclusionCount, ExclusionReason, ExclusionRecord
from transforms.exclusion_counts import CountExclusions

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _record(n: int, tenant: str, reason: ExclusionReason) -> ExclusionRecord:
    return ExclusionRecord(
        request_id=f"q{n}",
        tenant_id=tenant,
        event_time=T0,
        evidence_id=f"e{n}",
        document_id="d1",
        revision_id="r1",
        reason=reason,
        detail="",
        builder_version="test",
    )


RECORDS = [
    (0, _record(1, "acme", ExclusionReason.UNAUTHORIZED)),
    (30, _record(2, "acme", ExclusionReason.UNAUTHORIZED)),
    (70, _record(3, "acme", ExclusionReason.UNAUTHORIZED)),
    (70, _record(4, "globex", ExclusionReason.SUPERSEDED)),
]


def _count(tenant: str, reason: str, n: int, start: int | None = None) -> ExclusionCount:
    at = (lambda s: datetime.fromtimestamp(T0.timestamp() + s, UTC)) if start is not None else None
    return ExclusionCount(
        tenant_id=tenant,
        reason=reason,
        count=n,
        window_start=at(start) if at else None,
        window_end=at(start + 60) if at else None,
    )


def test_global_window_counts_the_whole_run() -> None:
    with test_pipeline.TestPipeline(runner="FnApiRunner") as p:
        counts = p | beam.Create([r for _, r in RECORDS]) | CountExclusions()
        assert_that(
            counts,
            equal_to([_count("acme", "unauthorized", 3), _count("globex", "superseded", 1)]),
        )


def test_fixed_windows_count_per_window() -> None:
    with test_pipeline.TestPipeline(runner="FnApiRunner") as p:
        counts = (
            p
            | beam.Create(RECORDS)
            | beam.MapTuple(lambda s, r: TimestampedValue(r, T0.timestamp() + s))
            | beam.WindowInto(FixedWindows(60))
            | CountExclusions()
        )
        assert_that(
            counts,
            equal_to(
                [
                    _count("acme", "unauthorized", 2, start=0),
                    _count("acme", "unauthorized", 1, start=60),
                    _count("globex", "superseded", 1, start=60),
                ]
            ),
        )
