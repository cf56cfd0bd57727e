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

import logging
import sys

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.runner import PipelineResult

from pipelines.command import run_command
from pipelines.options.help import CommandHelp
from pipelines.options.jobs import JOB_SECTIONS, StreamSettings, resolve_streaming
from pipelines.options.runner import STREAMING_RUNNER, pin_local_runner
from schemas.prompt_formats import FORMATS
from transforms.catalog.factory import catalog_provider
from transforms.exclusion_counts import WindowedExclusionCounts
from transforms.io.bigquery import RecentRequestIds, create_audit_tables
from transforms.io.pubsub import (
    ReadRequestRecords,
    emulator_receives_large_messages,
)
from transforms.job_outputs import DeadLetters, OutputPlan, write_outputs
from transforms.pack import PackRequests
from transforms.run_metrics import SummarizeWindows
from transforms.stream_parse import ParseRequestStream

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


def build(pipeline: beam.Pipeline, settings: StreamSettings) -> None:
    """Wire the streaming job into `pipeline`."""
    stream = settings.stream
    read = pipeline | "ReadRequests" >> ReadRequestRecords(
        stream.subscription, stream.timestamp_attribute, settings.max_record_bytes
    )
    sinks = settings.sinks
    # A restart remembers the request ids its manifests table holds (files hold no index).
    remembered = (
        RecentRequestIds(f"{sinks.dataset}.manifests", stream.dedup_ttl_seconds)
        if sinks.dataset is not None
        else None
    )
    parsed = read.records | "Parse" >> ParseRequestStream(
        settings.max_record_bytes, stream.dedup_ttl_seconds, remembered
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
            stream.window_seconds, stream.allowed_lateness_seconds
        ),
        run_id=settings.run_id,
        dead_letter_topic=stream.dead_letter_topic,
    )
    dead_letters = write_outputs(packed, letters, plan).dead_letters
    _ = (
        (packed.prompts, dead_letters)
        | "Summarized" >> beam.Flatten()
        | "SummarizeWindows"
        >> SummarizeWindows(stream.window_seconds, stream.allowed_lateness_seconds)
    )


def run(argv: list[str] | None = None, *, wait: bool = True) -> PipelineResult:
    """Start the job; with `wait=False` return at once so the caller can cancel it."""
    options = PipelineOptions(argv)
    options.view_as(StandardOptions).streaming = True
    pin_local_runner(options, STREAMING_RUNNER)
    settings = resolve_streaming(options)
    if options.view_as(StandardOptions).runner == STREAMING_RUNNER:
        _LOG.warning("%s", LOCAL_KILL_LIMIT)
    if settings.create_tables:
        create_audit_tables(settings.sinks.dataset)
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
    return run_command("evpack stream", HELP, JOB_SECTIONS["streaming"], _run, argv)


HELP = CommandHelp(
    __doc__,
    required={
        "subscription": "required",
        "prompts_topic": "required",
        "dead_letter_topic": "required",
        "catalog": "required unless --bigtable_table",
        "bigquery_dataset": "required unless --output",
    },
)
"""What `evpack stream --help` says beyond the flags' own text."""


if __name__ == "__main__":
    sys.exit(main())
