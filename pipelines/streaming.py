"""The streaming pipeline: Pub/Sub requests in, prompts to the generation topic, audit to BigQuery.

    python -m pipelines.streaming --subscription=projects/P/subscriptions/requests \\
        --prompts_topic=projects/P/topics/prompts \\
        --dead_letter_topic=projects/P/topics/dead-letters \\
        --bigquery_dataset=P.evpack --catalog=catalog.jsonl [--config=packing.yaml]

Locally it runs on Beam's in-process `BundleBasedDirectRunner` (no runner
download) against real services or the emulators (`PUBSUB_EMULATOR_HOST`,
`BIGQUERY_EMULATOR_HOST`); on Dataflow pass `--runner=DataflowRunner` and the
usual GCP flags. It composes the shared transforms; only the source, the
once-per-request_id step, the re-read catalog and the windowed counts are
specific to streaming.
"""

import argparse
import logging
import sys
from dataclasses import dataclass

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.runner import PipelineResult

from pipelines.command import run_command
from pipelines.options import (
    EvpackOptions,
    check_numbers,
    create_audit_tables,
    load_config,
    pin_local_runner,
    resolve_catalog,
    resolve_sinks,
    resource_name,
)
from schemas import PackingConfig
from schemas.prompt_formats import FORMATS
from transforms.catalog.factory import CatalogSource, catalog_provider
from transforms.catalog.refresh import load_snapshot
from transforms.exclusion_counts import WindowedExclusionCounts
from transforms.io.bigquery import RecentRequestIds
from transforms.io.pubsub import (
    ReadRequestRecords,
    emulator_receives_large_messages,
)
from transforms.job_outputs import DeadLetters, OutputPlan, write_outputs
from transforms.names import DEFAULT_DEDUP_TTL_SECONDS, DEFAULT_WINDOW_SECONDS
from transforms.pack import PackRequests
from transforms.run_metrics import SummarizeWindows
from transforms.sinks import Sinks
from transforms.stream_parse import ParseRequestStream

LOCAL_RUNNER = "BundleBasedDirectRunner"
LOCAL_PULL_MESSAGES = 10
"""Messages Beam's local Pub/Sub reader pulls, and acknowledges, at once."""
LOCAL_KILL_LIMIT = (
    f"local runner: its Pub/Sub reader acknowledges each pull (up to {LOCAL_PULL_MESSAGES} "
    "messages) before "
    "they are written, so a job killed now loses at most the messages of one pull "
    "(measured by tests/test_streaming_poison.py); on Dataflow a message is acknowledged "
    "only once its bundle is committed"
)

_LOG = logging.getLogger(__name__)


class StreamingOptions(PipelineOptions):
    """Flags of the streaming pipeline (the catalog, config and size flags are shared)."""

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--subscription",
            help="Request subscription, projects/<project>/subscriptions/<name>.",
        )
        parser.add_argument(
            "--dead_letter_topic",
            help="Topic for unprocessable inputs and rejected audit rows.",
        )
        parser.add_argument(
            "--timestamp_attribute",
            default="event_time",
            help="Message attribute holding the event time (RFC 3339 or epoch ms); "
            "messages without it use their publish time.",
        )
        parser.add_argument(
            "--window_seconds",
            type=int,
            default=DEFAULT_WINDOW_SECONDS,
            help="Fixed event-time window of the exclusion counts.",
        )
        parser.add_argument(
            "--allowed_lateness_seconds",
            type=int,
            default=0,
            help="Exclusions this late still update their window's count (as a delta row).",
        )
        parser.add_argument(
            "--dedup_ttl_seconds",
            type=int,
            default=DEFAULT_DEDUP_TTL_SECONDS,
            help="How long a request_id is remembered to drop redelivered copies.",
        )


HELP_SECTIONS = (
    (StreamingOptions, None),
    (
        EvpackOptions,
        frozenset(
            {
                "output",
                "prompts_topic",
                "bigquery_dataset",
                "create_tables",
                "catalog",
                "catalog_format",
                "catalog_mode",
                "bigtable_project",
                "bigtable_instance",
                "bigtable_table",
                "catalog_refresh_seconds",
                "catalog_cache_entries",
                "config",
                "prompt_format",
                "max_record_bytes",
            }
        ),
    ),
)
"""The flags `evpack stream` reads (`resolve_streaming`), as its --help lists them."""


@dataclass(frozen=True)
class StreamSettings:
    """Validated settings of one streaming job."""

    subscription: str
    dead_letter_topic: str
    sinks: Sinks
    create_tables: bool
    timestamp_attribute: str | None
    catalog: CatalogSource
    config: PackingConfig
    max_record_bytes: int
    window_seconds: int
    allowed_lateness_seconds: int
    dedup_ttl_seconds: int


def resolve_streaming(options: PipelineOptions) -> StreamSettings:
    """Check the flags, and that the catalog loads now rather than at the first request."""
    opts = options.view_as(StreamingOptions)
    shared = options.view_as(EvpackOptions)
    check_numbers(
        window_seconds=opts.window_seconds,
        allowed_lateness_seconds=opts.allowed_lateness_seconds,
        dedup_ttl_seconds=opts.dedup_ttl_seconds,
        max_record_bytes=shared.max_record_bytes,
    )
    sinks = resolve_sinks(options, window_seconds=opts.window_seconds)
    resource_name(sinks.prompts_topic, "prompts_topic", "topics")
    catalog = resolve_catalog(options, streaming=True)
    if catalog.mode == "side_input":
        snap = load_snapshot(catalog.pattern, catalog.file_format)  # type: ignore[arg-type]
        _LOG.info("catalog %s: %d documents", catalog.pattern, len(snap))
    return StreamSettings(
        subscription=resource_name(opts.subscription, "subscription", "subscriptions"),
        dead_letter_topic=resource_name(opts.dead_letter_topic, "dead_letter_topic", "topics"),
        sinks=sinks,
        create_tables=shared.create_tables,
        timestamp_attribute=opts.timestamp_attribute or None,
        catalog=catalog,
        config=load_config(shared.config, shared.prompt_format),
        max_record_bytes=shared.max_record_bytes,
        window_seconds=opts.window_seconds,
        allowed_lateness_seconds=opts.allowed_lateness_seconds,
        dedup_ttl_seconds=opts.dedup_ttl_seconds,
    )


def build(pipeline: beam.Pipeline, settings: StreamSettings) -> None:
    """Wire the streaming job into `pipeline`."""
    read = pipeline | "ReadRequests" >> ReadRequestRecords(
        settings.subscription, settings.timestamp_attribute, settings.max_record_bytes
    )
    sinks = settings.sinks
    # A restart remembers the request ids its manifests table holds (files hold no index).
    remembered = (
        RecentRequestIds(f"{sinks.dataset}.manifests", settings.dedup_ttl_seconds)
        if sinks.dataset is not None
        else None
    )
    parsed = read.records | "Parse" >> ParseRequestStream(
        settings.max_record_bytes, settings.dedup_ttl_seconds, remembered
    )
    # Requests are packed at their element timestamp unless they carry a time.
    # The catalog file is re-read while the job runs, or looked up in Bigtable.
    provider = catalog_provider(pipeline, settings.catalog, streaming=True)
    packed = parsed.requests | "Pack" >> PackRequests(settings.config, provider)
    letters = DeadLetters()
    letters.add(read.dead_letters, parsed.dead_letters)
    plan = OutputPlan(
        sinks=sinks,
        prompt_limits=FORMATS[settings.config.prompt_format].limits,
        count_exclusions=WindowedExclusionCounts(
            settings.window_seconds, settings.allowed_lateness_seconds
        ),
        dead_letter_topic=settings.dead_letter_topic,
    )
    dead_letters = write_outputs(packed, letters, plan).dead_letters
    _ = (
        (packed.prompts, dead_letters)
        | "Summarized" >> beam.Flatten()
        | "SummarizeWindows"
        >> SummarizeWindows(settings.window_seconds, settings.allowed_lateness_seconds)
    )


def run(argv: list[str] | None = None, *, wait: bool = True) -> PipelineResult:
    """Start the job; with `wait=False` return at once so the caller can cancel it."""
    options = PipelineOptions(argv)
    options.view_as(StandardOptions).streaming = True
    pin_local_runner(options, LOCAL_RUNNER)
    settings = resolve_streaming(options)
    if options.view_as(StandardOptions).runner == LOCAL_RUNNER:
        _LOG.warning("%s", LOCAL_KILL_LIMIT)
    if settings.create_tables:
        create_audit_tables(settings.sinks)
    emulator_receives_large_messages()
    pipeline = beam.Pipeline(options=options)
    build(pipeline, settings)
    result = pipeline.run()
    if wait:
        try:
            result.wait_until_finish()
        except KeyboardInterrupt:
            _LOG.info("stopping; the local Pub/Sub reader may take up to 30 s to let go")
            result.cancel()
    return result


def _run(argv: list[str]) -> int:
    run(argv)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m pipelines.streaming` and `evpack stream`."""
    return run_command("evpack stream", __doc__, HELP_SECTIONS, _run, argv)


if __name__ == "__main__":
    sys.exit(main())
