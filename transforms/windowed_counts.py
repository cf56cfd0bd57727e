"""Exclusion counts per tenant and reason in fixed event-time windows, late data included.

Each window fires once when the watermark passes its end, then once more per
late exclusion until the allowed lateness is over. Panes discard what they
already reported, so every row is a delta and the rows of one window sum to
its exclusions: a dashboard sums `count` grouped by tenant, reason and
window_start. Exclusions later than the allowed lateness are dropped by the
runner; the exclusion rows themselves are never dropped.
"""

import apache_beam as beam
from apache_beam.transforms import trigger, window

from schemas import ExclusionCount, ExclusionRecord
from transforms.counts import CountExclusions
from transforms.names import DEFAULT_WINDOW_SECONDS


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
