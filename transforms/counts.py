"""Exclusion counts per (tenant, reason), per window.

Windowing is the caller's choice: in the global window (batch) the counts
cover the whole run and carry no window bounds; after `FixedWindows`
(streaming) there is one row per tenant, reason and window.
"""

from collections.abc import Iterator

import apache_beam as beam
from apache_beam.transforms.window import BoundedWindow, IntervalWindow
from apache_beam.utils.timestamp import MAX_TIMESTAMP, MIN_TIMESTAMP

from schemas import ExclusionCount, ExclusionRecord


def count_row(key: tuple[str, str], count: int, window: BoundedWindow) -> ExclusionCount:
    """One count row; bounded windows give window_start/window_end, the global one None."""
    tenant_id, reason = key
    start = end = None
    if isinstance(window, IntervalWindow) and window.start > MIN_TIMESTAMP:
        start = window.start.to_utc_datetime(has_tz=True)
        if window.end < MAX_TIMESTAMP:
            end = window.end.to_utc_datetime(has_tz=True)
    return ExclusionCount(
        tenant_id=tenant_id, reason=reason, count=count, window_start=start, window_end=end
    )


class _ToRow(beam.DoFn):
    def process(
        self,
        element: tuple[tuple[str, str], int],
        window: BoundedWindow = beam.DoFn.WindowParam,
    ) -> Iterator[ExclusionCount]:
        yield count_row(element[0], element[1], window)


class CountExclusions(
    beam.PTransform[beam.PCollection[ExclusionRecord], beam.PCollection[ExclusionCount]]
):
    """ExclusionRecord -> ExclusionCount per (tenant_id, reason) in each window."""

    def expand(
        self, exclusions: beam.PCollection[ExclusionRecord]
    ) -> beam.PCollection[ExclusionCount]:
        return (
            exclusions
            | "KeyByTenantReason" >> beam.Map(lambda x: ((x.tenant_id, str(x.reason)), 1))
            | "Sum" >> beam.CombinePerKey(sum)
            | "ToRow" >> beam.ParDo(_ToRow())
        )
