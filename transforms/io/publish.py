"""Publishing to a Pub/Sub topic with an outcome per message: its message id, or why not.

Beam's `WriteToPubSub` (and the client library's batching publisher) gives
no outcome per element: a refused publish fails the bundle, which a
streaming runner retries forever (Dataflow) or gives up on and fails the
job after its messages were acknowledged (the local runner), and its
default retry deadline is ten minutes. The job needs to know, per prompt,
whether the queue took it, so a manifest is written only for a delivered
prompt and a refused one becomes a dead letter (`transforms.job_outputs`).
So `Publisher` calls the Publish RPC itself, a request of up to
`REQUEST_MESSAGES` messages or `REQUEST_BYTES` at a time, and sorts every
failure into one of three kinds (`failure_kind`):

- the topic refuses everything (`NotFound`, `PermissionDenied`,
  `Unauthenticated`): a configuration error. Every message of the call is
  refused at once, without further attempts;
- the service refuses one message (`InvalidArgument`, e.g. over the size
  limit): a request of several is split in halves until the refused message
  stands alone, so its neighbours are still published;
- anything else (unavailable, deadline exceeded, throttled, internal) is
  transient: retried with exponential backoff (0.5 s doubling, at most 8 s)
  until `timeout_seconds` (`--sink_timeout_seconds`) have passed since the
  call's first attempt; then the rest is refused as unreachable, which is a
  configuration error too (the topic is named, but cannot be reached).

A message over Pub/Sub's 10 MB limit (data and attributes) is refused before
it is sent, as the service would. A refusal of the topic as a whole is
`topic_wide`: the job that sees one stops once its dead letters are written
(`pipelines.streaming.watch`); a batch delivery exits 1.

How the launcher learns of it: `transforms.io.refusal_board`.
"""

import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.io.gcp.pubsub import PubsubMessage
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import BoundedWindow
from apache_beam.typehints.decorators import no_annotations
from apache_beam.utils.timestamp import Timestamp
from apache_beam.utils.windowed_value import PaneInfo, WindowedValue
from google.api_core import exceptions as api_exceptions
from google.cloud import pubsub_v1
from google.pubsub_v1 import types as pubsub_types
from google.pubsub_v1.services.publisher.client import PublisherClient as _GapicPublisher

from packer.parsing.dead_letters import dead_letter
from packer.parsing.names import DEAD_LETTERS, METRICS_NAMESPACE
from packer.parsing.strict_json import as_text
from schemas import DeadLetter
from transforms.io.refusal_board import RefusalBoard, unusable_counter

_LOG = logging.getLogger(__name__)

MESSAGE_BYTES = 10_000_000
"""Pub/Sub's limit on one message: its data and attributes (keys and values)."""
REQUEST_MESSAGES = 1000
"""Messages in one Publish request (Pub/Sub's limit)."""
REQUEST_BYTES = 9_000_000
"""Bytes of messages in one Publish request (Pub/Sub's limit is 10 MB, framing included)."""
DEFAULT_SINK_TIMEOUT_SECONDS = 60
"""How long a sink may stay unreachable before the job says so and stops (flag
`--sink_timeout_seconds`)."""
FIRST_BACKOFF_SECONDS = 0.5
MAX_BACKOFF_SECONDS = 8.0
PUBLISH_STAGE = "publish"
"""The dead-letter stage of a message its topic refused."""

_PUBLISH_RPC = _GapicPublisher.publish
"""The Publish RPC itself: `pubsub_v1.PublisherClient` (which sets up the emulator's
channel) overrides `publish` with its batching publisher."""

FailureKind = Literal["topic", "message", "transient"]
_TOPIC_ERRORS = (
    api_exceptions.NotFound,
    api_exceptions.PermissionDenied,
    api_exceptions.Unauthenticated,
)


def failure_kind(error: Exception) -> FailureKind:
    """Whether `error` refuses the whole topic, one message, or may pass if retried."""
    if isinstance(error, _TOPIC_ERRORS):
        return "topic"
    if isinstance(error, api_exceptions.InvalidArgument):
        return "message"
    return "transient"


def message_bytes(message: PubsubMessage) -> int:
    """The size Pub/Sub counts against its message limit: data plus attribute keys and values."""
    attributes = message.attributes or {}
    return len(message.data or b"") + sum(
        len(k.encode("utf-8")) + len(v.encode("utf-8")) for k, v in attributes.items()
    )


@dataclass(frozen=True)
class Refusal:
    """Why a message was not published; `topic_wide` when the topic itself refused or
    could not be reached (a configuration error, not this message's fault)."""

    reason: str
    topic_wide: bool
    cause: str = ""
    """For a topic-wide refusal, what it was in a word: the error's name, or `unreachable`."""


Outcome = str | Refusal
"""A published message's id, or its refusal."""


def _requests(messages: Sequence[tuple[int, PubsubMessage]]) -> Iterator[list]:
    """The (index, message) pairs in Publish requests within the request limits."""
    request: list[tuple[int, PubsubMessage]] = []
    size = 0
    for item in messages:
        length = message_bytes(item[1])
        if request and (len(request) >= REQUEST_MESSAGES or size + length > REQUEST_BYTES):
            yield request
            request, size = [], 0
        request.append(item)
        size += length
    if request:
        yield request


class Publisher:
    """Publishes messages to one topic, each with its outcome; see the module docstring."""

    def __init__(
        self,
        topic: str,
        timeout_seconds: float,
        client: pubsub_v1.PublisherClient | None = None,
    ) -> None:
        self.topic = topic
        self._timeout = timeout_seconds
        self._client = client or pubsub_v1.PublisherClient()
        self._broken: Refusal | None = None

    def publish(self, messages: Sequence[PubsubMessage]) -> list[Outcome]:
        """The outcome of each message, in order; within `timeout_seconds` of retrying."""
        outcomes: dict[int, Outcome] = {}
        sendable = []
        for i, message in enumerate(messages):
            size = message_bytes(message)
            if size > MESSAGE_BYTES:
                reason = f"message of {size} bytes is over Pub/Sub's {MESSAGE_BYTES}-byte limit"
                outcomes[i] = Refusal(reason, topic_wide=False)
            else:
                sendable.append((i, message))
        deadline = time.monotonic() + self._timeout
        for request in _requests(sendable):
            for i, outcome in self._send(request, deadline):
                outcomes[i] = outcome
        return [outcomes[i] for i in range(len(messages))]

    def _send(self, request: list, deadline: float) -> Iterator[tuple[int, Outcome]]:
        if self._broken is not None:  # the topic refused this call already: do not wait again
            yield from ((i, self._broken) for i, _ in request)
            return
        backoff = FIRST_BACKOFF_SECONDS
        while True:
            try:
                ids = self._call(request, deadline)
            except Exception as error:
                kind = failure_kind(error)
                if kind == "message" and len(request) > 1:
                    half = len(request) // 2
                    yield from self._send(request[:half], deadline)
                    yield from self._send(request[half:], deadline)
                    return
                left = deadline - time.monotonic()
                if kind == "transient" and left > 0:
                    time.sleep(min(backoff, left))
                    backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
                    continue
                refusal = self._refusal(kind, error)
                if refusal.topic_wide:
                    self._broken = refusal
                yield from ((i, refusal) for i, _ in request)
                return
            yield from zip((i for i, _ in request), ids, strict=True)
            return

    def _call(self, request: list, deadline: float) -> list[str]:
        messages = [
            pubsub_types.PubsubMessage(data=m.data, attributes=m.attributes or {})
            for _, m in request
        ]
        response = _PUBLISH_RPC(
            self._client,
            topic=self.topic,
            messages=messages,
            retry=None,
            timeout=max(deadline - time.monotonic(), 1.0),
        )
        return list(response.message_ids)

    def _refusal(self, kind: FailureKind, error: Exception) -> Refusal:
        text = f"{type(error).__name__}: {getattr(error, 'message', None) or error}"
        if kind == "transient":
            return Refusal(
                f"{self.topic} could not be reached within --sink_timeout_seconds="
                f"{self._timeout:g} ({text})",
                topic_wide=True,
                cause="unreachable",
            )
        topic_wide = kind == "topic"
        cause = type(error).__name__ if topic_wide else ""
        return Refusal(f"{self.topic} refused the message ({text})", topic_wide, cause)

    def reset(self) -> None:
        """Forget a topic-wide refusal: the next call tries the topic again."""
        self._broken = None

    def close(self) -> None:
        self._client.stop()


def unpublished(message: PubsubMessage, reason: str, topic: str) -> DeadLetter:
    """The dead letter of a message `topic` refused: stage `publish`, the message kept whole
    as its payload (`{"attributes": {...}, "data": "..."}`, the data as text), so it can be
    published again as it was."""
    attributes = dict(message.attributes or {})
    payload = json.dumps(
        {"attributes": attributes, "data": as_text(message.data)}, ensure_ascii=False
    )
    return dead_letter(PUBLISH_STAGE, reason, payload, topic, attributes.get("request_id"))


@dataclass(frozen=True)
class Published:
    """What `PublishWithOutcomes` made of its elements: those the topic took, and the
    dead letters of those it refused."""

    delivered: beam.PCollection
    refused: beam.PCollection[DeadLetter]


class _PublishFn(beam.DoFn):
    """Holds a bundle's elements, publishes them at its end (or every `REQUEST_MESSAGES`),
    and emits each delivered element with its own timestamp and window, or its dead letter."""

    def __init__(
        self,
        topic: str,
        to_message: Callable[[Any], PubsubMessage],
        timeout_seconds: float,
        counter: str,
        board: str | None,
    ) -> None:
        self._topic = topic
        self._to_message = to_message
        self._timeout = timeout_seconds
        self._delivered = Metrics.counter(METRICS_NAMESPACE, counter)
        self._board_directory = board

    def setup(self) -> None:
        self._publisher = Publisher(self._topic, self._timeout)
        self._board = RefusalBoard(self._board_directory) if self._board_directory else None

    def start_bundle(self) -> None:
        self._held: list[WindowedValue] = []
        self._publisher.reset()

    def process(
        self,
        element: Any,
        timestamp: Timestamp = beam.DoFn.TimestampParam,
        window: BoundedWindow = beam.DoFn.WindowParam,
        pane: PaneInfo = beam.DoFn.PaneInfoParam,
    ) -> Iterator[Any]:
        self._held.append(WindowedValue(element, timestamp, (window,), pane))
        if len(self._held) >= REQUEST_MESSAGES:
            yield from self._flush()

    def finish_bundle(self) -> Iterator[Any]:
        yield from self._flush()

    def teardown(self) -> None:
        publisher = getattr(self, "_publisher", None)
        if publisher is not None:
            publisher.close()

    def _flush(self) -> Iterator[Any]:
        held, self._held = self._held, []
        if not held:
            return
        messages = [self._to_message(v.value) for v in held]
        outcomes = self._publisher.publish(messages)
        refused = [
            unusable_counter(self._topic, o.cause)
            for o in outcomes
            if isinstance(o, Refusal) and o.topic_wide
        ]
        for counter in refused:
            Metrics.counter(METRICS_NAMESPACE, counter).inc()
        if self._board is not None:
            self._board.note(refused)
        for value, message, outcome in zip(held, messages, outcomes, strict=True):
            if isinstance(outcome, str):
                self._delivered.inc()
                yield value
                continue
            letter = unpublished(message, outcome.reason, self._topic)
            _LOG.error("not published (request_id %s): %s", letter.request_id, outcome.reason)
            yield pvalue.TaggedOutput(DEAD_LETTERS, value.with_value(letter))


class PublishWithOutcomes(beam.PTransform):
    """Each element as one message on `topic` (`to_message`); the delivered elements, and
    the dead letter (`unpublished`) of each one refused. Counts the delivered under
    `counter`, and the topic-wide refusals under `unusable_counter(topic, cause)`, also
    on the `RefusalBoard` at `board` when one is given (a local run)."""

    def __init__(
        self,
        topic: str,
        to_message: Callable[[Any], PubsubMessage],
        timeout_seconds: float,
        counter: str,
        board: str | None = None,
    ) -> None:
        super().__init__()
        self._fn = _PublishFn(topic, to_message, timeout_seconds, counter, board)

    @no_annotations  # the result is a Published, not a PCollection
    def expand(self, elements: beam.PCollection) -> Published:
        out = elements | "Publish" >> beam.ParDo(self._fn).with_outputs(
            DEAD_LETTERS, main="delivered"
        )
        return Published(out.delivered, out[DEAD_LETTERS])
