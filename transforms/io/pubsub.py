"""Pub/Sub in and out: request messages to records, prompts and dead letters to messages.

A request message carries one request as a JSON object, or several as a JSON
array. Its timestamp is the event-time attribute when the publisher sets one
(RFC 3339 or epoch milliseconds), else the publish time; a request without
`event_time`/`as_of` is packed at that timestamp.

Outgoing messages carry their routing facts as attributes so subscribers can
filter without parsing: `request_id`, `tenant_id`, `builder_version`,
`run_id` and `prompt_sha256` on prompts (with `conflicts` and
`uncovered_facets` for verification; a consumer deduplicates on
`request_id` + `prompt_sha256`); `stage`, `request_id`, `builder_version` on
dead letters. They are published by `transforms.io.publish`, with an outcome
per message.
"""

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import apache_beam as beam
import grpc
from apache_beam import pvalue
from apache_beam.io.gcp.pubsub import PubsubMessage, ReadFromPubSub
from apache_beam.transforms.window import TimestampedValue
from apache_beam.typehints.decorators import no_annotations
from apache_beam.utils.timestamp import Timestamp
from google.cloud import pubsub, pubsub_v1
from google.pubsub_v1.services.subscriber.transports.grpc import SubscriberGrpcTransport

from packer.parsing.dead_letters import dead_letter
from packer.parsing.names import DEAD_LETTERS, DEFAULT_MAX_RECORD_BYTES
from packer.parsing.strict_json import Refused, decode_text, loads, shown
from schemas import DeadLetter
from schemas.prompt_formats import PromptLine

EMULATOR_ENV = "PUBSUB_EMULATOR_HOST"


class _LargeMessageSubscriber(pubsub_v1.SubscriberClient):
    """A subscriber whose emulator channel takes messages of any size, as real Pub/Sub's does."""

    def __init__(self, **kwargs: Any) -> None:
        host = os.environ.get(EMULATOR_ENV)
        if host and "transport" not in kwargs:
            options = [("grpc.max_receive_message_length", -1)]
            channel = grpc.insecure_channel(target=host, options=options)
            kwargs["transport"] = SubscriberGrpcTransport(channel=channel)
        super().__init__(**kwargs)


def emulator_receives_large_messages() -> None:
    """On the emulator, let the local reader pull messages up to Pub/Sub's 10 MB.

    Against real Pub/Sub the client library opens its channel without a size
    limit, but against the emulator (`PUBSUB_EMULATOR_HOST`) it opens a plain
    one that refuses responses over gRPC's default 4 MB: one 5 MB message then
    fails every pull (RESOURCE_EXHAUSTED) and stalls the messages behind it.
    Beam's local reader builds its client as `google.cloud.pubsub.SubscriberClient()`,
    with no way to pass options, so that name is pointed at a subscriber whose
    emulator channel has no limit. Only when an emulator is set; Dataflow reads
    Pub/Sub in the service. Rejected: a reader of our own just for this (it
    would replace the runner's watermark handling too).
    """
    if os.environ.get(EMULATOR_ENV):
        pubsub.SubscriberClient = _LargeMessageSubscriber  # type: ignore[misc]


def message_source(subscription: str, message: PubsubMessage) -> str:
    """Where a record came from, for its dead letter: the subscription and message id."""
    return f"{subscription}#{message.message_id or 'unknown'}"


MAX_MESSAGE_RECORDS = 1000
"""Requests one message may carry as a JSON array."""


def split_payload(data: bytes, max_record_bytes: int) -> list[bytes] | str:
    """The request payloads of one message: each item of a JSON array, else the whole message.

    A message that is too large, not UTF-8 or not JSON is passed on unchanged,
    so parsing dead-letters it with the reason; an empty array yields nothing
    to pack and is passed on too, so it is dead-lettered rather than silently
    dropped. Items are re-encoded as ASCII JSON, so each is parsed (and
    refused) on its own. An array of more than `MAX_MESSAGE_RECORDS` items is
    refused whole (the reason is returned): `[0,0,...]` in 10 MB would be five
    million dead letters from one message.
    """
    text = decode_text(data, max_record_bytes)
    decoded = text if isinstance(text, Refused) else loads(text)
    if isinstance(decoded, list) and len(decoded) > MAX_MESSAGE_RECORDS:
        return f"message holds {len(decoded)} records, more than {MAX_MESSAGE_RECORDS}"
    if isinstance(decoded, list) and decoded:
        return [json.dumps(item).encode("ascii") for item in decoded]
    return [data]


ATTRIBUTE_BYTES = 1024
"""Pub/Sub's limit on one attribute value."""


def dedup_id(run_id: str, request_id: str) -> str:
    """The `dedup_id` attribute of a prompt's message: the same on every copy a retry or a
    rerun after a cut-off delivery sends (`transforms.delivery`)."""
    return f"{run_id}:{request_id}"


def prompt_message(prompt: PromptLine, run_id: str, dedup: str | None = None) -> PubsubMessage:
    """The generation-queue message of one prompt, in the configured prompt format.

    `run_id` (the job's, `schemas.run.new_run_id`) and `prompt_sha256` (the
    manifest's) let a consumer tell a rerun's copy of a prompt from a new one;
    `dedup_id` (`dedup`, by default `run_id:request_id`) is the same on every copy of
    one message a crash window can leave, for a consumer to drop all but one.
    Attributes `conflicts` (JSON label groups) and `uncovered_facets` (JSON list)
    carry what verification needs beyond the prompt text; one longer than an
    attribute may be is left out (the verifier then skips that check).
    """
    attributes = {
        "request_id": prompt.request_id,
        "tenant_id": prompt.tenant_id,
        "builder_version": prompt.builder_version,
        "run_id": run_id,
        "prompt_sha256": prompt.prompt_sha256,
        "dedup_id": dedup or dedup_id(run_id, prompt.request_id),
    }
    for name, value in (("conflicts", prompt.conflicts), ("uncovered_facets", prompt.uncovered)):
        encoded = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        if len(encoded.encode("utf-8")) <= ATTRIBUTE_BYTES:
            attributes[name] = encoded
    return PubsubMessage(data=prompt.line.encode("utf-8"), attributes=attributes)


def dead_letter_message(letter: DeadLetter) -> PubsubMessage:
    """The dead-letter-topic message of one unprocessable input, kept whole."""
    attributes = {"stage": letter.stage, "builder_version": letter.builder_version}
    if letter.request_id:
        attributes["request_id"] = letter.request_id
    return PubsubMessage(data=letter.model_dump_json().encode("utf-8"), attributes=attributes)


_FIRST = Timestamp.from_utc_datetime(datetime(1, 1, 1, tzinfo=UTC))
_LAST = Timestamp.from_utc_datetime(datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC))
_EPOCH_MILLIS = re.compile(r"-?[0-9]+")


def event_timestamp(message: PubsubMessage, attribute: str | None) -> Timestamp | str | None:
    """The message's event time from its attribute (RFC 3339 or epoch ms); None without one.

    Returns the reason instead when the attribute holds neither, or a time
    outside years 1..9999, the range of a request's timestamps: Beam's own
    reader would raise there and crash-loop the job on one message, and a time
    Beam holds but Python's datetime does not would fail the request at
    packing. Epoch milliseconds are ASCII digits only (Python's `int` also
    reads `" 5"`, `"1_000"` and other scripts' digits). Without the attribute
    the element keeps its publish time.
    """
    value = (message.attributes or {}).get(attribute) if attribute else None
    if value is None:
        return None
    try:
        stamp = _stamp(value)
    except (ValueError, OverflowError, TypeError) as err:
        return f"attribute {attribute}={shown(value)} is not RFC 3339 or epoch milliseconds: {err}"
    if not _FIRST <= stamp <= _LAST:
        return f"attribute {attribute}={shown(value)} is outside years 1..9999"
    return stamp


def _stamp(value: str) -> Timestamp:
    if _EPOCH_MILLIS.fullmatch(value):
        return Timestamp(micros=int(value) * 1000)
    return Timestamp.from_rfc3339(value)


@dataclass(frozen=True)
class StreamRecords:
    """The records of a subscription, and the dead letters of messages refused whole."""

    records: beam.PCollection[tuple[str, bytes]]
    dead_letters: beam.PCollection[DeadLetter]


class _SplitMessages(beam.DoFn):
    def __init__(self, subscription: str, attribute: str | None, max_record_bytes: int) -> None:
        self._subscription = subscription
        self._attribute = attribute
        self._max = max_record_bytes

    def process(self, message: PubsubMessage) -> Iterator[Any]:
        source = message_source(self._subscription, message)
        stamp = event_timestamp(message, self._attribute)
        payloads = split_payload(message.data, self._max) if not isinstance(stamp, str) else stamp
        if isinstance(payloads, str):
            yield pvalue.TaggedOutput(
                DEAD_LETTERS, dead_letter("parse", payloads, message.data, source, None)
            )
            return
        for payload in payloads:
            yield (source, payload) if stamp is None else TimestampedValue((source, payload), stamp)


class ReadRequestRecords(beam.PTransform):
    """(source, payload) records from a subscription, one per request in each message.

    The same record shape as the file readers, so parsing is shared. The event
    time attribute is read here rather than by Beam's reader, so a bad one is
    a dead letter (stage `parse`) and not a failing read.
    """

    def __init__(
        self,
        subscription: str,
        timestamp_attribute: str | None = None,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    ) -> None:
        super().__init__()
        self._split = _SplitMessages(subscription, timestamp_attribute, max_record_bytes)

    @no_annotations  # the result is a StreamRecords, not a PCollection
    def expand(self, pbegin: beam.pvalue.PBegin) -> StreamRecords:
        split = (
            pbegin
            | "Read" >> ReadFromPubSub(subscription=self._split._subscription, with_attributes=True)
            | "Split" >> beam.ParDo(self._split).with_outputs(DEAD_LETTERS, main="records")
        )
        return StreamRecords(split.records, split[DEAD_LETTERS])
