"""Drive the streaming job against Pub/Sub: topics, publishing, draining, and stopping.

Shared by the streaming tests and the local demo. Pub/Sub and BigQuery
clients find the emulators through the environment (`tests.emulators`).
"""

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from apache_beam.runners.runner import PipelineResult
from google.cloud import bigquery, pubsub_v1

from pipelines.streaming import run

DRAIN_SECONDS = 120.0


@dataclass(frozen=True)
class Routes:
    """The topics and subscriptions of one streaming job."""

    project: str
    name: str

    def topic(self, kind: str) -> str:
        return f"projects/{self.project}/topics/{self.name}-{kind}"

    def subscription(self, kind: str) -> str:
        return f"projects/{self.project}/subscriptions/{self.name}-{kind}"

    def create(self) -> None:
        """Topics for requests, prompts and dead letters, each with one subscription."""
        publisher = pubsub_v1.PublisherClient()
        subscriber = pubsub_v1.SubscriberClient()
        with subscriber:
            for kind in ("requests", "prompts", "dead-letters"):
                publisher.create_topic(name=self.topic(kind))
                subscriber.create_subscription(
                    name=self.subscription(kind), topic=self.topic(kind), ack_deadline_seconds=60
                )

    def job_args(self, dataset: str) -> list[str]:
        return [
            f"--subscription={self.subscription('requests')}",
            f"--prompts_topic={self.topic('prompts')}",
            f"--dead_letter_topic={self.topic('dead-letters')}",
            f"--bigquery_dataset={self.project}.{dataset}",
        ]


def publish(topic: str, payloads: Iterable[str | bytes], **attributes: str) -> None:
    """Publish each payload as one message and wait until the service has them all."""
    publisher = pubsub_v1.PublisherClient()
    futures = [
        publisher.publish(topic, p.encode() if isinstance(p, str) else p, **attributes)
        for p in payloads
    ]
    for future in futures:
        future.result(timeout=60)


@dataclass(frozen=True)
class Received:
    """One message read back from a subscription."""

    data: bytes
    attributes: dict[str, str]

    def json(self) -> dict:
        return json.loads(self.data)


def drain(subscription: str, count: int, seconds: float = DRAIN_SECONDS) -> list[Received]:
    """Pull and acknowledge until `count` messages arrived or `seconds` passed.

    Returns what arrived; callers assert on it, so a shortfall fails with the
    messages that did come. After reaching `count` it pulls once more, so an
    unexpected extra message shows up too.
    """
    received: list[Received] = []
    deadline = time.monotonic() + seconds
    with pubsub_v1.SubscriberClient() as subscriber:
        extra_pull = True
        while time.monotonic() < deadline and (len(received) < count or extra_pull):
            if len(received) >= count:
                extra_pull = False
            response = subscriber.pull(
                subscription=subscription,
                max_messages=100,
                timeout=10 if extra_pull else 3,
                return_immediately=False,
            )
            messages = response.received_messages
            if messages:
                subscriber.acknowledge(
                    subscription=subscription, ack_ids=[m.ack_id for m in messages]
                )
            received.extend(Received(m.message.data, dict(m.message.attributes)) for m in messages)
            if not messages and len(received) < count:
                time.sleep(0.5)
    return received


def query_until(
    client: bigquery.Client,
    sql: str,
    done: Callable[[list[dict]], bool],
    seconds: float = DRAIN_SECONDS,
) -> list[dict]:
    """Rows of `sql` once `done(rows)` holds, or the last rows read when `seconds` passed.

    Audit rows are written beside the prompts, not before them, so a reader
    that has seen a prompt may still have to wait for its rows.
    """
    deadline = time.monotonic() + seconds
    while True:
        rows = [dict(r) for r in client.query(sql).result()]
        if done(rows) or time.monotonic() > deadline:
            return rows
        time.sleep(1)


@contextmanager
def streaming_job(routes: Routes, args: list[str]) -> Iterator[PipelineResult]:
    """The streaming job running in-process until the block exits.

    Cancelling waits for the source's pending pull to return, so a throwaway
    message is published to the request topic to end it at once.
    """
    result = run(args, wait=False)
    try:
        yield result
    finally:
        stopper = threading.Thread(target=result.cancel, daemon=True)
        stopper.start()
        while stopper.is_alive():
            publish(routes.topic("requests"), ["{}"], purpose="stop")
            stopper.join(timeout=2)
