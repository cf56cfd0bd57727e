"""Rows a sink can encode go on to it; each row it cannot becomes a dead letter at stage `write`.

Validation already refuses inputs no sink could write, so a row failing here
is a bug upstream; it must still cost that one row, never the run (a batch
job that fails at write loses every valid row beside the bad one; a streaming
job redelivers the bundle forever). Rows are checked in batches with the
sink's own encoder (Arrow with the model's schema, UTF-8 JSON), and one by one
only when a batch fails, so the check costs about a microsecond a row.
Rejected: catching the writer's failure itself; Beam's file sinks fail the
whole bundle, and by then the bad row cannot be told from the others.
Rejected: `BatchElements` to form the batches; it stamps a batch flushed at
the end of a bundle with the end of the global window, so in a streaming job
the rows after it would leave their event-time windows (the windowed counts,
the per-window files). The batches are held per bundle instead, and each row
goes on with its own timestamp and window.

In a batch job (a bounded input) the check also hands on what the encoder
made of each batch of rows that passed (`SinkRows.encoded`): for Parquet,
the Arrow record batch the files are written from, so an audit row is
converted to Arrow once (`transforms.io.row_files.WriteArrowBatches`).
Measured 2026-12-03 on 2,000 requests of the speed workload (CPU time per
row): the check 38.8 us a manifest and 2.3 an exclusion; the writer's own
conversion, `model_dump` then Beam's dict-to-Arrow step, 39.1 and 7.8 more:
about 55 us a request saved, 1 s of a 20,000-request job. A streaming job's
rows keep their own windows, which one batch cannot carry: they are written
as rows.
"""

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import apache_beam as beam
import pyarrow as pa
from apache_beam import pvalue
from apache_beam.transforms.window import BoundedWindow
from apache_beam.typehints.decorators import no_annotations
from apache_beam.utils.timestamp import Timestamp
from apache_beam.utils.windowed_value import PaneInfo, WindowedValue
from pydantic import BaseModel

from packer.parsing.dead_letters import dead_letter
from packer.parsing.names import DEAD_LETTERS
from schemas import DeadLetter
from schemas.arrow import arrow_schema
from schemas.prompt_formats import PromptLine

WRITE_STAGE = "write"
ENCODED = "encoded"
BATCH_ROWS = 1024
Encoder = Callable[[Sequence[Any]], object]
"""Encodes a batch of rows the way their sink will, raising if any row cannot be."""


def arrow_encoder(model: type[BaseModel]) -> Encoder:
    """Rows of `model` as one Arrow batch with the schema derived from the model (Parquet)."""
    schema = arrow_schema(model)
    return lambda rows: pa.RecordBatch.from_pylist([r.model_dump() for r in rows], schema)


def json_encoder(rows: Sequence[BaseModel]) -> object:
    """Rows as JSON lines, as `WriteJsonl` writes them."""
    return [r.model_dump_json() for r in rows]


def prompt_line_encoder(lines: Sequence[PromptLine]) -> object:
    """Formatted prompt lines as UTF-8 text."""
    return [line.line.encode("utf-8") for line in lines]


def _payload(row: Any) -> str:
    if isinstance(row, BaseModel):
        try:
            return json.dumps(row.model_dump(mode="json"), default=repr)
        except Exception:  # the row could not even be dumped: its repr still shows it
            return repr(row)
    return repr(row)


def write_letter(sink: str, row: Any, error: Exception) -> DeadLetter:
    """The dead letter of one row `sink` cannot encode, with the row's request_id."""
    reason = f"{sink}: row cannot be encoded: {type(error).__name__}: {error}"
    return dead_letter(WRITE_STAGE, reason, _payload(row), sink, getattr(row, "request_id", None))


class _Check(beam.DoFn):
    """Rows held per bundle, encoded `BATCH_ROWS` at a time, each re-emitted with its own
    timestamp, window and pane; with `keep_encoded`, each encoded batch of the rows that
    passed on the `ENCODED` output too (in the window of its first row: bounded input only,
    where every row is in the global window)."""

    def __init__(self, sink: str, encode: Encoder, keep_encoded: bool) -> None:
        self._sink = sink
        self._encode = encode
        self._keep = keep_encoded
        self._held: list[WindowedValue] = []

    def start_bundle(self) -> None:
        self._held = []

    def process(
        self,
        row: Any,
        timestamp: Timestamp = beam.DoFn.TimestampParam,
        window: BoundedWindow = beam.DoFn.WindowParam,
        pane: PaneInfo = beam.DoFn.PaneInfoParam,
    ) -> Iterator[Any]:
        self._held.append(WindowedValue(row, timestamp, (window,), pane))
        if len(self._held) >= BATCH_ROWS:
            yield from self._flush()

    def finish_bundle(self) -> Iterator[Any]:
        yield from self._flush()

    def _flush(self) -> Iterator[Any]:
        held, self._held = self._held, []
        if not held:
            return
        try:
            encoded = self._encode([v.value for v in held])
        except Exception:  # some row is bad: find it below
            passed = []
            for out in self._one_by_one(held):
                if not isinstance(out, pvalue.TaggedOutput):
                    passed.append(out)
                yield out
            if self._keep and passed:  # each encodes alone, so together they do
                yield pvalue.TaggedOutput(
                    ENCODED, passed[0].with_value(self._encode([v.value for v in passed]))
                )
            return
        yield from held
        if self._keep:
            yield pvalue.TaggedOutput(ENCODED, held[0].with_value(encoded))

    def _one_by_one(self, held: list[WindowedValue]) -> Iterator[Any]:
        for value in held:
            try:
                self._encode([value.value])
            except Exception as err:  # any failure to encode is this row's dead letter
                letter = write_letter(self._sink, value.value, err)
                yield pvalue.TaggedOutput(DEAD_LETTERS, value.with_value(letter))
                continue
            yield value


@dataclass(frozen=True)
class SinkRows:
    """The rows that encode, the dead letters of those that do not, and, for a bounded
    input, what the encoder made of the rows that encode, a batch at a time."""

    rows: beam.PCollection[Any]
    dead_letters: beam.PCollection[DeadLetter]
    encoded: beam.PCollection[Any] | None = None


class EncodableRows(beam.PTransform):
    """Split rows into those `encode` accepts and `write` dead letters (named after `sink`)."""

    def __init__(self, sink: str, encode: Encoder) -> None:
        super().__init__()
        self._sink = sink
        self._encode = encode

    @no_annotations  # the result is a SinkRows, not a PCollection
    def expand(self, rows: beam.PCollection[Any]) -> SinkRows:
        bounded = rows.is_bounded
        check = beam.ParDo(_Check(self._sink, self._encode, keep_encoded=bounded))
        tags = (DEAD_LETTERS, ENCODED) if bounded else (DEAD_LETTERS,)
        checked = rows | "Check" >> check.with_outputs(*tags, main="rows")
        encoded = checked[ENCODED] if bounded else None
        return SinkRows(checked.rows, checked[DEAD_LETTERS], encoded)
