"""The encode check keeps each row's timestamp and window: streaming rows stay in theirs."""

import apache_beam as beam
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.window import FixedWindows, TimestampedValue

from transforms.sink_rows import BATCH_ROWS, EncodableRows


def natural_encoder(rows: list[int]) -> object:
    """Fails on a negative row, as a sink fails on a row it cannot encode."""
    if any(row < 0 for row in rows):
        raise ValueError("negative")
    return rows


def stamped(value: int, timestamp=beam.DoFn.TimestampParam, window=beam.DoFn.WindowParam):
    return value, int(timestamp), int(window.start)


def test_rows_and_dead_letters_keep_their_timestamp_and_window() -> None:
    values = [*range(2 * BATCH_ROWS + 7), -5, -17]  # full batches, a part one, bad rows
    good = [v for v in values if v >= 0]
    with test_pipeline.TestPipeline(runner="FnApiRunner") as p:
        checked = (
            p
            | beam.Create(values)
            | "Stamp" >> beam.Map(lambda v: TimestampedValue(v, v))
            | beam.WindowInto(FixedWindows(10))
            | EncodableRows("naturals", natural_encoder)
        )
        rows = checked.rows | "Rows" >> beam.Map(stamped)
        letters = checked.dead_letters | "Letters" >> beam.Map(
            lambda d, t=beam.DoFn.TimestampParam, w=beam.DoFn.WindowParam: (
                d.payload,
                int(t),
                int(w.start),
            )
        )
        assert_that(rows, equal_to([(v, v, v - v % 10) for v in good]), label="rows")
        bad = [(str(v), v, v - v % 10) for v in values if v < 0]
        assert_that(letters, equal_to(bad), label="letters")
