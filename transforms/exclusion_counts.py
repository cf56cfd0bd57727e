"""Exclusion counts per (tenant, reason), per window: the whole run, or fixed event-time windows.

`CountExclusions` leaves the windowing to the caller: in the global window
(batch) the counts cover the whole run and carry no window bounds. Streaming
uses `WindowedExclusionCounts`: fixed event-time windows, late data included.
Each window fires once when the watermark passes its end, then once more per
late exclusion until the allowed lateness is over. Panes discard what they
already reported, so every row is a delta and the rows of one window sum to
its exclusions: a dashboard sums `count` grouped by tenant, reason and
window_start. Exclusions later than the allowed lateness are dropped by the
runner; the exclusion rows themselves are never dropped.
"""

from collections.abc import Iterator

import apache_beam as beam
from apache_beam.transforms import trigger, window
from apache_beam.transforms.window import BoundedWindow, IntervalWindow
from apache_beam.utils.timestamp import MAX_TIMESTAMP, MIN_TIMESTAMP

from packer.parsing.names import DEFAULT_WINDOW_SECONDS
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


def event_time_windows(window_seconds: int, allowed_lateness_seconds: int) -> beam.WindowInto:
    """Fixed event-time windows firing at the watermark and once per late element, discarding.

    The windowing of every streaming aggregate (counts, the window summaries),
    so their rows and lines cover the same windows.
    """
    return beam.WindowInto(
        window.FixedWindows(window_seconds),
        trigger=trigger.AfterWatermark(late=trigger.AfterCount(1)),
        allowed_lateness=allowed_lateness_seconds,
        accumulation_mode=trigger.AccumulationMode.DISCARDING,
    )


class WindowedExclusionCounts(beam.PTransform):
    """ExclusionRecord -> ExclusionCount per (tenant, reason, fixed window)."""

    def __init__(
        self, window_seconds: int = DEFAULT_WINDOW_SECONDS, allowed_lateness_seconds: int = 0
    ) -> None:
        super().__init__()
        self._window = window_seconds
        self._lateness = allowed_lateness_seconds

    def expand(
        self, exclusions: beam.PCollection[ExclusionRecord]
    ) -> beam.PCollection[ExclusionCount]:
        return (
            exclusions
            | "FixedWindows" >> event_time_windows(self._window, self._lateness)
            | "Count" >> CountExclusions()
        )
