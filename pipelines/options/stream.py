"""The streaming job's source and windows: the request subscription, the dead-letter
topic, event time, the counts' windows and how long a request id is remembered."""

import argparse
from dataclasses import dataclass

from apache_beam.options.pipeline_options import PipelineOptions

from packer.parsing.names import DEFAULT_DEDUP_TTL_SECONDS, DEFAULT_WINDOW_SECONDS
from pipelines.options.flags import Flag, Param, declare, pubsub_regex
from pipelines.options.sinks import resource_name


class StreamOptions(PipelineOptions):
    """The request stream, and the windows of its counts."""

    FLAGS = (
        Flag(
            "subscription",
            "Request subscription, projects/<project>/subscriptions/<name>.",
            template=Param(
                "Request subscription", pubsub_regex("subscriptions"), "PUBSUB_SUBSCRIPTION"
            ),
        ),
        Flag(
            "dead_letter_topic",
            "Topic for unprocessable inputs and rejected audit rows.",
            template=Param("Dead-letter topic", pubsub_regex("topics"), "PUBSUB_TOPIC"),
        ),
        Flag(
            "timestamp_attribute",
            "Message attribute holding the event time (RFC 3339 or epoch ms); "
            "messages without it use their publish time.",
            default="event_time",
            template=Param("Event-time attribute", "^([A-Za-z_][A-Za-z0-9_.-]{0,255})?$"),
        ),
        Flag(
            "window_seconds",
            "Fixed event-time window of the exclusion counts.",
            default=DEFAULT_WINDOW_SECONDS,
            type=int,
            bound="positive",
            template=Param("Count window (seconds)", "^[1-9][0-9]{0,8}$"),
        ),
        Flag(
            "allowed_lateness_seconds",
            "Exclusions this late still update their window's count (as a delta row).",
            default=0,
            type=int,
            bound="not negative",
            template=Param("Allowed lateness (seconds)", "^[0-9]{1,9}$"),
        ),
        Flag(
            "dedup_ttl_seconds",
            "How long a request_id is remembered to drop redelivered copies.",
            default=DEFAULT_DEDUP_TTL_SECONDS,
            type=int,
            bound="positive",
            template=Param("Redelivery memory (seconds)", "^[1-9][0-9]{0,8}$"),
        ),
    )

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        declare(parser, cls.FLAGS)


@dataclass(frozen=True)
class StreamSource:
    """Where a streaming job reads its requests and sends what it cannot read, and its
    windows."""

    subscription: str
    dead_letter_topic: str
    timestamp_attribute: str | None
    window_seconds: int
    allowed_lateness_seconds: int
    dedup_ttl_seconds: int


def resolve_stream(options: PipelineOptions) -> StreamSource:
    """The stream the flags name (their numbers are checked with the job's others)."""
    opts = options.view_as(StreamOptions)
    return StreamSource(
        subscription=resource_name(opts.subscription, "subscription", "subscriptions"),
        dead_letter_topic=resource_name(opts.dead_letter_topic, "dead_letter_topic", "topics"),
        timestamp_attribute=opts.timestamp_attribute or None,
        window_seconds=opts.window_seconds,
        allowed_lateness_seconds=opts.allowed_lateness_seconds,
        dedup_ttl_seconds=opts.dedup_ttl_seconds,
    )
