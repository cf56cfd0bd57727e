"""Run metrics that the per-element counters cannot give: dead letters by stage,
and prompt-token percentiles (Beam distributions only keep min/max/mean)."""

from collections.abc import Sequence

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.transforms.stats import ApproximateQuantilesCombineFn

from schemas import DeadLetter, PromptMessage
from transforms.names import METRICS_NAMESPACE

PERCENTILES = (50, 95)
_QUANTILES = 101  # min, 1%, ..., max: index i is the i-th percentile


def count_dead_letter(letter: DeadLetter) -> DeadLetter:
    """Count one dead letter under its stage and pass it on."""
    Metrics.counter(METRICS_NAMESPACE, f"dead_letters_{letter.stage}").inc()
    return letter


class CountDeadLetters(beam.PTransform[beam.PCollection[DeadLetter], beam.PCollection[DeadLetter]]):
    """Counts dead letters per stage (`dead_letters_<stage>`), passing them through."""

    def expand(self, letters: beam.PCollection[DeadLetter]) -> beam.PCollection[DeadLetter]:
        return letters | "Count" >> beam.Map(count_dead_letter)


def publish_percentiles(quantiles: Sequence[int]) -> None:
    """Set gauges `prompt_tokens_p50`, `prompt_tokens_p95` from 101 quantiles."""
    if not quantiles:
        return
    for pct in PERCENTILES:
        Metrics.gauge(METRICS_NAMESPACE, f"prompt_tokens_p{pct}").set(quantiles[pct])


class PromptTokenPercentiles(
    beam.PTransform[beam.PCollection[PromptMessage], beam.PCollection[None]]
):
    """Publishes p50/p95 of prompt tokens as gauges, per window of the input.

    Batch: one global window, the whole run. Streaming windows the prompts
    first: the gauges then hold the last closed window's percentiles. No
    default for an empty window (a global combine over windows needs none).
    """

    def expand(self, prompts: beam.PCollection[PromptMessage]) -> beam.PCollection[None]:
        quantiles = ApproximateQuantilesCombineFn.create(num_quantiles=_QUANTILES)
        return (
            prompts
            | "Tokens" >> beam.Map(lambda prompt: prompt.prompt_tokens)
            | "Quantiles" >> beam.CombineGlobally(quantiles).without_defaults()
            | "Publish" >> beam.Map(publish_percentiles)
        )
