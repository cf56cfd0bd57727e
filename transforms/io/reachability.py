"""Whether the sinks a run names can be reached, checked before it starts, in bounded time.

Each client library retries an unreachable service for minutes by default
(Pub/Sub's publish for ten, BigQuery's calls for ten): a batch job with its
topic down logged "packed 100%" and never ended. So before a job starts,
each named Pub/Sub topic and subscription is looked up and the BigQuery
dataset read, every call retried only within `timeout_seconds`
(`--sink_timeout_seconds`); a sink missing or out of reach is named, and the
job exits 1. During the run the same bound holds for every publish
(`transforms.io.publish`).

What counts as a problem: a topic or subscription that does not exist, or
a service that does not answer in time. A `PermissionDenied` on the lookup
is not: a publisher's role (`roles/pubsub.publisher`) may publish to a
topic it may not look up, and publishing will say so per message. A
dataset that does not exist is a problem only when the job may not create
it (`--create_tables=false`); one the caller may not read is.
"""

from collections.abc import Callable
from functools import partial

import requests
from google.api_core import exceptions as api_exceptions
from google.api_core.retry import Retry, if_exception_type
from google.cloud import pubsub_v1

from transforms.io.bigquery import bigquery_client

_UNAVAILABLE = (
    api_exceptions.ServiceUnavailable,
    api_exceptions.DeadlineExceeded,
    api_exceptions.InternalServerError,
    api_exceptions.TooManyRequests,
    ConnectionError,
    requests.exceptions.ConnectionError,
    requests.exceptions.Timeout,
)


def _retry(timeout_seconds: float) -> Retry:
    return Retry(
        predicate=if_exception_type(*_UNAVAILABLE),
        initial=0.5,
        maximum=4.0,
        timeout=timeout_seconds,
    )


def _problem(
    what: str,
    call: Callable[[], object],
    timeout_seconds: float,
    timeout_flag: str = "sink_timeout_seconds",
) -> str | None:
    """What is wrong with reaching `what` by `call`, or None when it answered (`timeout_flag`:
    the flag that set `timeout_seconds`)."""
    try:
        call()
    except api_exceptions.NotFound:
        return f"{what} does not exist"
    except api_exceptions.PermissionDenied:  # gRPC's 403 (Pub/Sub); BigQuery's HTTP 403 is not
        return None
    except (api_exceptions.RetryError, *_UNAVAILABLE) as err:
        cause = getattr(err, "cause", None) or err
        return (
            f"{what} could not be reached within --{timeout_flag}={timeout_seconds:g} "
            f"({type(cause).__name__})"
        )
    except Exception as err:  # anything else the service said: name it, do not start
        return f"{what} could not be used ({type(err).__name__}: {err})"
    return None


def pubsub_problems(
    topics: dict[str, str | None], subscriptions: dict[str, str | None], timeout_seconds: float
) -> list[str]:
    """The problems of each named topic and subscription (flag -> resource name)."""
    if not any({**topics, **subscriptions}.values()):
        return []
    retry = _retry(timeout_seconds)
    with pubsub_v1.SubscriberClient() as subscriber:
        publisher = pubsub_v1.PublisherClient()

        def get_topic(name: str) -> object:
            return publisher.get_topic(topic=name, retry=retry, timeout=timeout_seconds)

        def get_subscription(name: str) -> object:
            return subscriber.get_subscription(
                subscription=name, retry=retry, timeout=timeout_seconds
            )

        lookups = [
            *((flag, name, get_topic) for flag, name in topics.items()),
            *((flag, name, get_subscription) for flag, name in subscriptions.items()),
        ]
        found = [
            _problem(f"--{flag} {name}", partial(get, name), timeout_seconds)
            for flag, name, get in lookups
            if name
        ]
        publisher.stop()
    return [problem for problem in found if problem]


def dataset_problem(
    dataset: str | None,
    timeout_seconds: float,
    created: bool,
    timeout_flag: str = "sink_timeout_seconds",
) -> str | None:
    """The problem of the BigQuery dataset `dataset` (project.dataset), if any; a missing one
    is fine when the job is to create it (`created`)."""
    if dataset is None:
        return None
    client = bigquery_client(dataset.split(".")[0])

    def read() -> object:
        try:
            return client.get_dataset(
                dataset, retry=_retry(timeout_seconds), timeout=timeout_seconds
            )
        except api_exceptions.NotFound:
            if not created:
                raise
            return None

    try:
        return _problem(f"--bigquery_dataset {dataset}", read, timeout_seconds, timeout_flag)
    finally:
        client.close()
