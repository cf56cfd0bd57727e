"""The encode check keeps each row's timestamp and window: streaming rows stay in theirs;
a batch job's Parquet files are written from the check's own Arrow batches."""

from pathlib import Path

import apache_beam as beam
import pyarrow.parquet as pq
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.window import FixedWindows, TimestampedValue
from hypothesis import given
from hypothesis import strategies as st

from schemas import ManifestRow
from tests.audit_rows import MANIFESTS
from transforms.io.row_files import BEAM_BATCH_ROWS, WriteArrowBatches, WriteFiles
from transforms.sink_rows import BATCH_ROWS, EncodableRows, arrow_encoder


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


def test_a_bounded_check_hands_on_the_encoding_of_exactly_the_rows_that_passed() -> None:
    """Each encoded batch holds rows that passed, every such row once: a batch with a bad
    row is encoded again without it."""
    values = [*range(2 * BATCH_ROWS + 7), -5, -17]
    with test_pipeline.TestPipeline(runner="FnApiRunner") as p:
        checked = p | beam.Create(values) | EncodableRows("naturals", natural_encoder)
        assert checked.encoded is not None
        rows = checked.encoded | beam.FlatMap(lambda batch: batch)
        assert_that(rows, equal_to([v for v in values if v >= 0]))


def test_parquet_from_the_checks_arrow_batches_is_the_file_of_the_rows(tmp_path: Path) -> None:
    """A batch job writes the Arrow batches of the sink check (converted once); the files
    are byte for byte those `WriteToParquet` writes from the rows (more rows than one of
    its record batches, so batches are cut where it cuts them)."""
    rows = [  # over a Parquet data page (1 MiB) a column: pages end where chunks end
        MANIFESTS[i % len(MANIFESTS)].model_copy(update={"request_id": f"r{i:04}" + "é" * 999})
        for i in range(BEAM_BATCH_ROWS + BATCH_ROWS + 3)
    ]
    with test_pipeline.TestPipeline(runner="FnApiRunner") as p:
        checked = p | beam.Create(rows) | EncodableRows("x", arrow_encoder(ManifestRow))
        _ = checked.rows | WriteFiles(str(tmp_path / "rows"), "manifests")
        assert checked.encoded is not None
        _ = checked.encoded | WriteArrowBatches(str(tmp_path / "batches"), "manifests", ManifestRow)
    [from_rows] = (tmp_path / "rows" / "manifests").glob("*.parquet")
    [from_batches] = (tmp_path / "batches" / "manifests").glob("*.parquet")
    assert from_batches.read_bytes() == from_rows.read_bytes()
    assert pq.read_table(from_batches).num_rows == len(rows)


@given(st.binary(), st.text(st.characters(codec="utf-8")))
def test_a_staged_prompt_reads_back_as_its_line_and_anything_else_as_it_is(
    raw: bytes, line: str
) -> None:
    """`unqueued` (verify's reader of a run's outbox) never raises: a staged prompt gives
    its line as a prompt file holds it, any other bytes come back for the reader to refuse."""
    from schemas.prompt_formats import PromptLine
    from transforms.sinks import queued, unqueued

    staged = queued(PromptLine("q1", "acme", "bv", line, (("E1", "E2"),), ("pto",), "ab"))
    assert unqueued(staged.model_dump_json().encode("utf-8")) == line.encode("utf-8")
    assert unqueued(raw) == raw  # no staged prompt: random bytes never spell one
