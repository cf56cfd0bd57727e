"""Pub/Sub in and out: request messages to records, prompts and dead letters to messages.

A request message carries one request as a JSON object, or several as a JSON
array. Its timestamp is the event-time attribute when the publisher sets one
(RFC 3339 or epoch milliseconds), else the publish time; a request without
`event_time`/`as_of` is packed at that timestamp.

Outgoing messages carry their routing facts as attributes so subscribers can
filter without parsing: `request_id`, `tenant_id`, `builder_version` on
prompts; `stage`, `request_id`, `builder_version` on dead letters.
"""

import json
from collections.abc import Callable, Iterator
from typing import Any

import apache_beam as beam
from apache_beam.io.gcp.pubsub import PubsubMessage, ReadFromPubSub, WriteToPubSub

from packer.formats import PromptLine
from schemas import DeadLetter


def message_source(subscription: str, message: PubsubMessage) -> str:
    """Where a record came from, for its dead letter: the subscription and message id."""
    return f"{subscription}#{message.message_id or 'unknown'}"


def split_payload(data: bytes) -> list[str]:
    """The request payloads of one message: each item of a JSON array, else the whole text.

    Anything that is not valid JSON is passed on unchanged, so parsing
    dead-letters it with the reason; an empty array yields nothing to pack and
    is passed on too, so it is dead-lettered rather than silently dropped.
    """
    text = data.decode("utf-8", errors="replace")
    try:
        decoded = json.loads(text)
    except json.JSONDecodeError:
        return [text]
    if isinstance(decoded, list) and decoded:
        return [json.dumps(item, ensure_ascii=False) for item in decoded]
    return [text]


def prompt_message(prompt: PromptLine) -> PubsubMessage:
    """The generation-queue message of one prompt, in the configured prompt format."""
    return PubsubMessage(
        data=prompt.line.encode("utf-8"),
        attributes={
            "request_id": prompt.request_id,
            "tenant_id": prompt.tenant_id,
            "builder_version": prompt.builder_version,
        },
    )


def dead_letter_message(letter: DeadLetter) -> PubsubMessage:
    """The dead-letter-topic message of one unprocessable input, kept whole."""
    attributes = {"stage": letter.stage, "builder_version": letter.builder_version}
    if letter.request_id:
        attributes["request_id"] = letter.request_id
    return PubsubMessage(data=letter.model_dump_json().encode("utf-8"), attributes=attributes)


class ReadRequestRecords(beam.PTransform):
    """(source, payload) records from a subscription, one per request in each message.

    The same record shape as the file readers, so parsing is shared.
    """

    def __init__(self, subscription: str, timestamp_attribute: str | None = None) -> None:
        super().__init__()
        if not subscription.startswith("projects/") or "/subscriptions/" not in subscription:
            raise ValueError(
                "subscription must be projects/<project>/subscriptions/<name>, "
                f"got {subscription!r}"
            )
        self._subscription = subscription
        self._timestamp_attribute = timestamp_attribute

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[tuple[str, str]]:
        subscription = self._subscription

        def records(message: PubsubMessage) -> Iterator[tuple[str, str]]:
            source = message_source(subscription, message)
            for payload in split_payload(message.data):
                yield source, payload

        return (
            pbegin
            | "Read"
            >> ReadFromPubSub(
                subscription=subscription,
                with_attributes=True,
                timestamp_attribute=self._timestamp_attribute,
            )
            | "Split" >> beam.FlatMap(records).with_output_types(tuple[str, str])
        )


class PublishMessages(beam.PTransform):
    """Each element as one message on a topic, shaped by `to_message` (prompts, dead letters)."""

    def __init__(self, topic: str, to_message: Callable[[Any], PubsubMessage]) -> None:
        super().__init__()
        self._topic = topic
        self._to_message = to_message

    def expand(self, elements: beam.PCollection[Any]) -> beam.pvalue.PDone:
        return (
            elements
            | "ToMessage" >> beam.Map(self._to_message)
            | "Publish" >> WriteToPubSub(self._topic, with_attributes=True)
        )
