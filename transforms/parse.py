"""Request records -> validated, de-duplicated requests and dead letters, as a batch transform.

The decisions (size and encoding limits, shapes, grouping flat rows, which of
duplicate records is kept) are the plain functions of `packer.parsing.request_records`;
this module only spreads them over a PCollection: decode each record, group
by request_id, assemble each group.

What the grouping moves between workers is a decoded record (`Entry`) keyed
by its request_id, with an explicit coder (`EntryCoder`): four length-framed
strings, deterministic, a fifth of the cost of the pickling fallback Beam
would otherwise pick for a dataclass (4 against 19 us for a 10 kB record).
Rejected: grouping validated `Request`s (validation once, before the
grouping), since a request costs eight times its record's text to pickle,
and duplicates would be validated only to be dead-lettered.

A record's text is parsed twice: strictly before the grouping (the request_id
keys it, and only the strict parser refuses a key named twice), then by
`json.loads` for validation (C, about 40 us for 10 kB). Rejected: shipping
the parsed record through the grouping (marshal loads it in a third of the
time, but the text must travel too, for dead letters that show it as sent:
twice the shuffled bytes); `Request.model_validate_json` (one pass, about 10%
faster on this step, but a second JSON reader with errors of its own: the
dead letters of bad records would read differently).

Parsing once, revisited with measurements (2026-12-03, 2,000 records of the
speed workload, 10.5 kB each, CPU time per record with the workers' collector
setting, load average ~7 on 2 cores): the strict decode before the grouping
costs 130 us; after it, the coder both ways 26 us, `json.loads` 55 and
validation 52. Validating before the grouping and shipping the `Request`
instead would cost that validation plus pickling (57 us) and unpickling (78
us), 187 us against 133, though its 9.6 kB pickle is smaller than the 10.6 kB
the coded record ships. Shipping the strict parse's dict (marshal: 8.9 kB, 10
us to write, 33 to read) would save 22 us of `json.loads`. Either way the
text no longer travels, and the dead letters made after the grouping (a
duplicate request_id, a record that fails validation) must show the record
as sent: shipping both doubles the shuffled bytes. So the text alone travels
and is read twice.
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.metrics import Metrics
from apache_beam.typehints.decorators import no_annotations

from packer.parsing.names import (
    DEAD_LETTERS,
    DEFAULT_MAX_RECORD_BYTES,
    METRICS_NAMESPACE,
    InputShape,
)
from packer.parsing.request_records import Entry, assemble, decode
from schemas import DeadLetter, Request


class EntryCoder(beam.coders.Coder):
    """An `Entry` as its four strings, each but the last after its length (4 bytes).

    Strings are encoded with `surrogatepass`: a source name may hold the
    surrogate escapes of a file name that is not UTF-8.
    """

    def encode(self, value: Entry) -> bytes:
        *framed, last = (
            part.encode("utf-8", "surrogatepass")
            for part in (value.shape, value.sha256, value.source, value.payload)
        )
        return b"".join(len(p).to_bytes(4, "big") + p for p in framed) + last

    def decode(self, encoded: bytes) -> Entry:
        parts, at = [], 0
        for _ in range(3):
            size = int.from_bytes(encoded[at : at + 4], "big")
            parts.append(encoded[at + 4 : at + 4 + size].decode("utf-8", "surrogatepass"))
            at += 4 + size
        shape, sha256, source = parts
        payload = encoded[at:].decode("utf-8", "surrogatepass")
        return Entry(shape, sha256, source, payload)  # type: ignore[arg-type]

    def is_deterministic(self) -> bool:
        return True


beam.coders.registry.register_coder(Entry, EntryCoder)


class _Decode(beam.DoFn):
    def __init__(self, shape: InputShape, max_record_bytes: int) -> None:
        self._shape = shape
        self._max = max_record_bytes
        self._records = Metrics.counter(METRICS_NAMESPACE, "records_in")

    def process(self, record: tuple[str, bytes]) -> Iterator[Any]:
        self._records.inc()
        source, payload = record
        decoded = decode(source, payload, self._shape, self._max)
        if isinstance(decoded, DeadLetter):
            yield pvalue.TaggedOutput(DEAD_LETTERS, decoded)
        else:
            yield decoded


class _Assemble(beam.DoFn):
    def __init__(self) -> None:
        self._requests = Metrics.counter(METRICS_NAMESPACE, "requests_in")

    def process(self, group: tuple[str, Iterable[Entry]]) -> Iterator[Any]:
        request, letters = assemble(*group)
        for letter in letters:
            yield pvalue.TaggedOutput(DEAD_LETTERS, letter)
        if request is not None:
            self._requests.inc()
            yield request


class ParseRequests(beam.PTransform[beam.PCollection[tuple[str, bytes]], "ParseResult"]):
    """(source, payload) records -> validated, de-duplicated requests + dead letters.

    Counts `records_in` (records read) and `requests_in` (requests assembled).
    """

    def __init__(
        self, shape: InputShape = "auto", max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    ) -> None:
        super().__init__()
        self._shape = shape
        self._max = max_record_bytes

    @no_annotations  # the result is a ParseResult, not a PCollection
    def expand(self, records: beam.PCollection[tuple[str, bytes]]) -> "ParseResult":
        decode = beam.ParDo(_Decode(self._shape, self._max)).with_output_types(tuple[str, Entry])
        decoded = records | "Decode" >> decode.with_outputs(DEAD_LETTERS, main="entries")
        assembled = (
            decoded.entries
            | "GroupByRequestId" >> beam.GroupByKey()
            | "Assemble" >> beam.ParDo(_Assemble()).with_outputs(DEAD_LETTERS, main="requests")
        )
        letters = (
            decoded[DEAD_LETTERS],
            assembled[DEAD_LETTERS],
        ) | "AllDeadLetters" >> beam.Flatten()
        return ParseResult(assembled.requests, letters)


@dataclass(frozen=True)
class ParseResult:
    """Valid requests and the dead letters of every record that did not make one."""

    requests: beam.PCollection[Request]
    dead_letters: beam.PCollection[DeadLetter]
