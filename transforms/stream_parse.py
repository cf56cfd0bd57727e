"""Parse a stream of request records, once per request_id despite redelivery.

Pub/Sub delivers at least once and publishers retry, so one request may arrive
twice. The batch reader groups a whole run by request_id; a stream has no end
to group over, so here each record is validated on its own (nested shape: one
request per record) and a stateful step keyed by request_id lets the first
valid one through. Later copies become `dedupe` dead letters, so every input
record is still accounted for. The state of a key expires `ttl_seconds` after
its first record (processing time), which bounds state size; pick a TTL longer
than the longest redelivery or publisher retry you expect.

The local runner ignores Pub/Sub `id_label`; on Dataflow, setting it (to an
attribute the publisher fills with the request_id) drops redeliveries in the
service as well, and this step still covers retries published as new messages.

What is decided per record (`parse_record`, `duplicate_letter`) is plain
functions in `packer.parsing.request_records`; here are only the DoFns and the state.
"""

from collections.abc import Callable, Iterator
from typing import Any

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.coders import StrUtf8Coder
from apache_beam.metrics import Metrics
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import (
    ReadModifyWriteStateSpec,
    TimerSpec,
    on_timer,
)
from apache_beam.typehints.decorators import no_annotations
from apache_beam.utils.timestamp import Duration, Timestamp

from packer.parsing.names import DEAD_LETTERS, DEFAULT_DEDUP_TTL_SECONDS, METRICS_NAMESPACE
from packer.parsing.request_records import REMEMBERED, Entry, duplicate_letter, parse_record
from schemas import Request
from transforms.parse import ParseResult

_KEPT = ReadModifyWriteStateSpec("kept", StrUtf8Coder())
_EXPIRY = TimerSpec("expiry", TimeDomain.REAL_TIME)
_KEPT_STATE = beam.DoFn.StateParam(_KEPT)
_EXPIRY_TIMER = beam.DoFn.TimerParam(_EXPIRY)


class _Parse(beam.DoFn):
    def __init__(self, max_record_bytes: int) -> None:
        self._max = max_record_bytes
        self._records = Metrics.counter(METRICS_NAMESPACE, "records_in")

    def process(self, record: tuple[str, bytes]) -> Iterator[Any]:
        self._records.inc()
        parsed = parse_record(record[0], record[1], self._max)
        if isinstance(parsed, list):
            for letter in parsed:
                yield pvalue.TaggedOutput(DEAD_LETTERS, letter)
        else:
            yield parsed


class _FirstPerRequestId(beam.DoFn):
    """Keyed by request_id: emit the first request, dead-letter later copies until expiry.

    `remembered` loads, once per worker at start, the request_ids packed before
    the job (re)started: keyed state does not survive a restart of the local
    runner, nor a new Dataflow job replacing one, so without it a redelivered
    or re-published request would get a second prompt and manifest.
    """

    def __init__(self, ttl_seconds: int, remembered: Callable[[], frozenset[str]] | None) -> None:
        self._ttl = Duration(seconds=ttl_seconds)
        self._remembered = remembered
        self._duplicates = Metrics.counter(METRICS_NAMESPACE, "duplicate_requests")
        self._requests = Metrics.counter(METRICS_NAMESPACE, "requests_in")

    def setup(self) -> None:
        self._before = self._remembered() if self._remembered else frozenset()

    def process(
        self,
        element: tuple[str, tuple[Entry, Request]],
        kept_state: Any = _KEPT_STATE,
        expiry: Any = _EXPIRY_TIMER,
    ) -> Iterator[Any]:
        request_id, (entry, request) = element
        kept = kept_state.read()
        if kept is None and request_id in self._before:
            kept = REMEMBERED
            kept_state.write(kept)
            expiry.set(Timestamp.now() + self._ttl)
        if kept is None:
            kept_state.write(f"{entry.sha256[:16]} from {entry.source}")
            expiry.set(Timestamp.now() + self._ttl)
            self._requests.inc()
            yield request
            return
        self._duplicates.inc()
        yield pvalue.TaggedOutput(DEAD_LETTERS, duplicate_letter(request_id, entry, kept))

    @on_timer(_EXPIRY)
    def expire(self, kept_state: Any = _KEPT_STATE) -> None:
        kept_state.clear()


class ParseRequestStream(beam.PTransform):
    """(source, payload) records -> requests, first per request_id, + dead letters."""

    def __init__(
        self,
        max_record_bytes: int,
        ttl_seconds: int = DEFAULT_DEDUP_TTL_SECONDS,
        remembered: Callable[[], frozenset[str]] | None = None,
    ) -> None:
        super().__init__()
        self._max = max_record_bytes
        self._ttl = ttl_seconds
        self._remembered = remembered

    @no_annotations  # the result is a ParseResult, not a PCollection
    def expand(self, records: beam.PCollection[tuple[str, bytes]]) -> ParseResult:
        parsed = records | "Parse" >> beam.ParDo(_Parse(self._max)).with_output_types(
            tuple[str, Any]
        ).with_outputs(DEAD_LETTERS, main="keyed")
        first = parsed.keyed | "FirstPerRequestId" >> beam.ParDo(
            _FirstPerRequestId(self._ttl, self._remembered)
        ).with_outputs(DEAD_LETTERS, main="requests")
        letters = (parsed[DEAD_LETTERS], first[DEAD_LETTERS]) | "AllDeadLetters" >> beam.Flatten()
        return ParseResult(first.requests, letters)
