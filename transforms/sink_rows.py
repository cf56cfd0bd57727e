"""Rows a sink can encode go on to it; each row it cannot becomes a dead letter at stage `write`.

Validation already refuses inputs no sink could write, so a row failing here
is a bug upstream; it must still cost that one row, never the run (a batch
job that fails at write loses every valid row beside the bad one; a streaming
job redelivers the bundle forever). Rows are checked in batches with the
sink's own encoder (Arrow with the model's schema, UTF-8 JSON), and one by one
only when a batch fails, so the check costs about a microsecond a row.
Rejected: catching the writer's failure itself; Beam's file sinks fail the
whole bundle, and by then the bad row cannot be told from the others.
"""

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import apache_beam as beam
import pyarrow as pa
from apache_beam import pvalue
from apache_beam.typehints.decorators import no_annotations
from pydantic import BaseModel

from packer.formats import PromptLine
from schemas import DeadLetter
from schemas.arrow import arrow_schema
from transforms.dead_letters import dead_letter
from transforms.names import DEAD_LETTERS

WRITE_STAGE = "write"
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
    def __init__(self, sink: str, encode: Encoder) -> None:
        self._sink = sink
        self._encode = encode

    def process(self, batch: list[Any]) -> Iterator[Any]:
        try:
            self._encode(batch)
        except Exception:  # some row is bad: find it below
            yield from self._one_by_one(batch)
            return
        yield from batch

    def _one_by_one(self, batch: list[Any]) -> Iterator[Any]:
        for row in batch:
            try:
                self._encode([row])
            except Exception as err:  # any failure to encode is this row's dead letter
                yield pvalue.TaggedOutput(DEAD_LETTERS, write_letter(self._sink, row, err))
                continue
            yield row


@dataclass(frozen=True)
class SinkRows:
    """The rows that encode, and the dead letters of those that do not."""

    rows: beam.PCollection[Any]
    dead_letters: beam.PCollection[DeadLetter]


class EncodableRows(beam.PTransform):
    """Split rows into those `encode` accepts and `write` dead letters (named after `sink`)."""

    def __init__(self, sink: str, encode: Encoder) -> None:
        super().__init__()
        self._fn = _Check(sink, encode)

    @no_annotations  # the result is a SinkRows, not a PCollection
    def expand(self, rows: beam.PCollection[Any]) -> SinkRows:
        checked = (
            rows
            | "Batch" >> beam.BatchElements(min_batch_size=64, max_batch_size=1024)
            | "Check" >> beam.ParDo(self._fn).with_outputs(DEAD_LETTERS, main="rows")
        )
        return SinkRows(checked.rows, checked[DEAD_LETTERS])
