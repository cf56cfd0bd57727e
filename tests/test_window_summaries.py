"""`SummarizeWindows`: the streaming job's summary, one line per event-time window."""

import apache_beam as beam
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.window import TimestampedValue

from packer import Catalog, PackerRuntime, pack_request
from packer.parsing.dead_letters import dead_letter
from schemas import PackingConfig
from tests.factories import candidate, document, request
from transforms.run_metrics import SummarizeWindows, WindowTally

RUNTIME = PackerRuntime.load()


def _prompt(request_id: str, words: int):
    req = request(candidate("e1", text="Refunds take a week. " * words), request_id=request_id)
    return pack_request(req, Catalog([document()]), PackingConfig(), RUNTIME).prompt


def test_nearest_rank_percentiles() -> None:
    tally = WindowTally(prompt_tokens=[5, 1, 4, 2, 3])
    assert [tally.percentile(p) for p in (0, 20, 50, 95, 100)] == [1, 1, 3, 5, 5]


def test_one_line_per_window_with_prompts_tokens_and_dead_letters() -> None:
    prompts = [_prompt("q1", 1), _prompt("q2", 5), _prompt("q3", 9)]
    tokens = [p.prompt_tokens for p in prompts]
    letters = [dead_letter("parse", "not JSON", "x", "", None) for _ in range(2)]
    letters.append(dead_letter("validate", "no question", "{}", "", None))
    stamped = [
        (prompts[0], 1),
        (prompts[1], 2),
        (letters[0], 3),
        (prompts[2], 12),  # the second window
        (letters[1], 13),
        (letters[2], 14),
    ]
    with test_pipeline.TestPipeline(runner="FnApiRunner") as p:
        lines = (
            p
            | beam.Create(stamped)
            | beam.MapTuple(lambda item, at: TimestampedValue(item, at))
            | SummarizeWindows(window_seconds=10)
        )
        assert_that(
            lines,
            equal_to(
                [
                    f"evpack window [00:00:00, 00:00:10) on time: 2 prompts, context tokens "
                    f"p50 {tokens[0]}, p95 {tokens[1]}, max {tokens[1]}; dead letters 1 (parse 1)",
                    f"evpack window [00:00:10, 00:00:20) on time: 1 prompts, context tokens "
                    f"p50 {tokens[2]}, p95 {tokens[2]}, max {tokens[2]}; "
                    "dead letters 2 (parse 1, validate 1)",
                ]
            ),
        )
