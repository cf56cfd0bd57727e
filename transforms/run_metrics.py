"""Run metrics that the per-element counters cannot give: dead letters by stage,
and prompt-token percentiles (Beam distributions only keep min/max/mean).

Batch publishes percentiles over the whole run, approximately (a run can
hold millions of prompts). A streaming job never ends, so its summary comes
per event-time window: `SummarizeWindows` logs one line per window pane
(prompts, context-token percentiles, dead letters by stage), the streaming
counterpart of the batch run's summary, and sets the same gauges. A window
holds few enough prompts for exact percentiles.
"""

import logging
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.utils.windowed_value import PaneInfoTiming

from packer.parsing.names import METRICS_NAMESPACE
from schemas import DeadLetter, PromptMessage
from transforms.exclusion_counts import event_time_windows

PERCENTILES = (50, 95)
_QUANTILES = 101  # min, 1%, ..., max: index i is the i-th percentile

_LOG = logging.getLogger(__name__)


def count_dead_letter(letter: DeadLetter) -> DeadLetter:
    """Count one dead letter under its stage and pass it on."""
    Metrics.counter(METRICS_NAMESPACE, f"dead_letters_{letter.stage}").inc()
    return letter


class CountDeadLetters(beam.PTransform[beam.PCollection[DeadLetter], beam.PCollection[DeadLetter]]):
    """Counts dead letters per stage (`dead_letters_<stage>`), passing them through."""

    def expand(self, letters: beam.PCollection[DeadLetter]) -> beam.PCollection[DeadLetter]:
        return letters | "Count" >> beam.Map(count_dead_letter)


def set_percentile_gauges(values: dict[int, int]) -> None:
    """Set gauges `prompt_tokens_p<pct>` (p50, p95)."""
    for pct, value in values.items():
        Metrics.gauge(METRICS_NAMESPACE, f"prompt_tokens_p{pct}").set(value)


def publish_percentiles(quantiles: Sequence[int]) -> None:
    """Set the percentile gauges from 101 quantiles."""
    if quantiles:
        set_percentile_gauges({pct: quantiles[pct] for pct in PERCENTILES})


class PromptTokenPercentiles(
    beam.PTransform[beam.PCollection[PromptMessage], beam.PCollection[None]]
):
    """Publishes p50/p95 of prompt tokens over the run as gauges (global window)."""

    def expand(self, prompts: beam.PCollection[PromptMessage]) -> beam.PCollection[None]:
        return (
            prompts
            | "Tokens" >> beam.Map(lambda prompt: prompt.prompt_tokens)
            | "Quantiles" >> beam.ApproximateQuantiles.Globally(_QUANTILES)
            | "Publish" >> beam.Map(publish_percentiles)
        )


@dataclass
class WindowTally:
    """What one window pane packed and dead-lettered."""

    prompt_tokens: list[int] = field(default_factory=list)
    dead_letters: Counter[str] = field(default_factory=Counter)

    def percentile(self, pct: int) -> int:
        """Nearest-rank percentile of the prompt tokens (the tally has at least one)."""
        ranked = sorted(self.prompt_tokens)
        return ranked[max(0, -(-pct * len(ranked) // 100) - 1)]

    def render(self, start: str, end: str, timing: str) -> str:
        letters = sum(self.dead_letters.values())
        by_stage = ", ".join(f"{k} {v}" for k, v in sorted(self.dead_letters.items()))
        line = f"evpack window [{start}, {end}) {timing}: {len(self.prompt_tokens)} prompts"
        if self.prompt_tokens:
            line += (
                f", context tokens p50 {self.percentile(50)}, p95 {self.percentile(95)}, "
                f"max {max(self.prompt_tokens)}"
            )
        return line + f"; dead letters {letters}" + (f" ({by_stage})" if letters else "")


class _Tally(beam.CombineFn):
    def create_accumulator(self) -> WindowTally:
        return WindowTally()

    def add_input(self, tally: WindowTally, item: PromptMessage | DeadLetter) -> WindowTally:
        if isinstance(item, DeadLetter):
            tally.dead_letters[item.stage] += 1
        else:
            tally.prompt_tokens.append(item.prompt_tokens)
        return tally

    def merge_accumulators(self, tallies: Any) -> WindowTally:
        merged = WindowTally()
        for tally in tallies:
            merged.prompt_tokens += tally.prompt_tokens
            merged.dead_letters.update(tally.dead_letters)
        return merged

    def extract_output(self, tally: WindowTally) -> WindowTally:
        return tally


class _LogWindow(beam.DoFn):
    def process(
        self,
        tally: WindowTally,
        win: Any = beam.DoFn.WindowParam,
        pane: Any = beam.DoFn.PaneInfoParam,
    ) -> Iterator[str]:
        line = tally.render(
            win.start.to_utc_datetime().strftime("%H:%M:%S"),
            win.end.to_utc_datetime().strftime("%H:%M:%S"),
            "late" if pane.timing == PaneInfoTiming.LATE else "on time",
        )
        if tally.prompt_tokens:
            set_percentile_gauges({pct: tally.percentile(pct) for pct in PERCENTILES})
        _LOG.info("%s", line)
        yield line


class SummarizeWindows(
    beam.PTransform[beam.PCollection[PromptMessage | DeadLetter], beam.PCollection[str]]
):
    """Prompts and dead letters -> one summary line per event-time window pane, logged.

    Windows and lateness as the exclusion counts: a pane fires when the
    watermark passes the window's end and once per late element after it.
    """

    def __init__(self, window_seconds: int, allowed_lateness_seconds: int = 0) -> None:
        super().__init__()
        self._window = window_seconds
        self._lateness = allowed_lateness_seconds

    def expand(self, items: beam.PCollection[PromptMessage | DeadLetter]) -> beam.PCollection[str]:
        return (
            items
            | "Windows" >> event_time_windows(self._window, self._lateness)
            | "Tally" >> beam.CombineGlobally(_Tally()).without_defaults()
            | "Log" >> beam.ParDo(_LogWindow())
        )
