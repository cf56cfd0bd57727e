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
import shutil
import sys
import tempfile
import threading
import time

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.runner import PipelineResult

from pipelines.command import CommandFailed, run_command
from pipelines.options.help import CommandHelp
from pipelines.options.jobs import JOB_SECTIONS, StreamSettings, resolve_streaming
from pipelines.options.runner import STREAMING_RUNNER, pin_local_runner
from pipelines.options.sinks import require_reachable
from transforms.catalog.factory import catalog_provider
from transforms.exclusion_counts import WindowedExclusionCounts
from transforms.io.bigquery import RecentRequestIds, create_audit_tables
from transforms.io.publish import PUBLISH_STAGE
from transforms.io.pubsub import (
    ReadRequestRecords,
    emulator_receives_large_messages,
)
from transforms.io.refusal_board import RefusalBoard
from transforms.job_outputs import DeadLetters, OutputPlan
from transforms.pack import PackRequests
from transforms.pack_job import JobSteps, parse_pack_write
from transforms.run_metrics import SummarizeWindows
from transforms.sinks import PromptDelivery
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


def build(pipeline: beam.Pipeline, settings: StreamSettings, board: str | None = None) -> None:
    """Wire the streaming job into `pipeline`; with `board`, its publishers note there what
    their topics refused as a whole (`transforms.io.refusal_board.RefusalBoard`, for `watch`)."""
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
    parse = ParseRequestStream(settings.max_record_bytes, stream.dedup_ttl_seconds, remembered)
    # Requests are packed at their element timestamp unless they carry a time.
    # The catalog file is re-read while the job runs, or looked up in Bigtable.
    provider = catalog_provider(pipeline, settings.catalog, streaming=True)
    plan = OutputPlan(
        sinks=sinks,
        prompt_limits=settings.config.format.limits,
        count_exclusions=WindowedExclusionCounts(
            stream.window_seconds, stream.allowed_lateness_seconds
        ),
        run_id=settings.run_id,
        delivery=PromptDelivery(settings.sink_timeout_seconds, publish_now=True, board=board),
        dead_letter_topic=stream.dead_letter_topic,
    )
    letters = DeadLetters()
    letters.add("Read", read.dead_letters)
    steps = JobSteps(parse, PackRequests(settings.config, provider), plan)
    job = parse_pack_write(read.records, steps, letters)
    _ = (
        (job.packed.prompts, job.outputs.dead_letters)
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
    stream = settings.stream
    require_reachable(
        options,
        settings.sinks,
        settings.sink_timeout_seconds,
        settings.create_tables,
        topics={"dead_letter_topic": stream.dead_letter_topic},
        subscriptions={"subscription": stream.subscription},
    )
    if settings.create_tables:
        create_audit_tables(settings.sinks.dataset)
    emulator_receives_large_messages()
    pipeline = beam.Pipeline(options=options)
    local = options.view_as(StandardOptions).runner == STREAMING_RUNNER
    board = tempfile.mkdtemp(prefix="evpack-publish-") if local and wait else None
    build(pipeline, settings, board)
    result = pipeline.run()
    if board is None:
        return result
    try:
        watch(result, board)
    except KeyboardInterrupt:
        _LOG.info("stopping; the local Pub/Sub reader may take up to 30 s to let go")
        result.cancel()
    finally:
        shutil.rmtree(board, ignore_errors=True)
    return result


SETTLE_SECONDS = 5.0
"""Once a topic refused the job as a whole, how long no worker may have published (every
message pulled is delivered or dead-lettered) before the job stops."""
STOP_WITHIN_SECONDS = 60.0
"""The longest a job goes on after such a refusal (messages keep arriving): it stops then."""


class TopicRefused(CommandFailed):
    """A topic refused the job's messages as a whole: missing, forbidden or out of reach."""


def stop_line(refused: dict[tuple[str, str], int]) -> str:
    """The one line a job stopped by `watch` exits with."""
    parts = [f"{topic} refused {n} messages ({cause})" for (topic, cause), n in refused.items()]
    return (
        f"{'; '.join(parts)}: each is a dead letter at stage {PUBLISH_STAGE} with its message, "
        "and a refused prompt's request has no manifest; fix the topic (create it, grant "
        "roles/pubsub.publisher, or make it reachable) and restart: requests already "
        "delivered are not packed again"
    )


def watch(result: PipelineResult, board: str, settle_seconds: float = SETTLE_SECONDS) -> None:
    """Wait for the job; stop it (exit 1, `TopicRefused`) once a topic refused it as a whole
    and what it pulled is delivered or dead-lettered.

    A missing or forbidden topic refuses every later message too: going on
    would only turn the whole stream into dead letters, where stopping leaves
    the messages not yet pulled in the subscription for the restart. The job
    stops once no worker published for `settle_seconds` (every pulled message
    is through, its dead letter published), or `STOP_WITHIN_SECONDS` after
    the first refusal. The workers note both on the `board`
    (`transforms.io.refusal_board.RefusalBoard`). The local runner's wait has no
    timeout, so it waits on a thread while this one reads the board.
    Dataflow: the launcher does not wait there; each refused prompt is still
    a dead letter, and the `topic_refused_all|TOPIC|CAUSE` counter is the one
    to alert on.
    """
    failure: list[BaseException] = []

    def wait() -> None:
        try:
            result.wait_until_finish()
        except BaseException as err:  # handed to the caller's thread below
            failure.append(err)

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    first = None
    while waiter.is_alive():
        waiter.join(timeout=1.0)
        reading = RefusalBoard.read(board)
        if not reading.refused:
            continue
        now = time.time()
        first = first or now
        if now - reading.last_publish >= settle_seconds or now - first >= STOP_WITHIN_SECONDS:
            result.cancel()
            raise TopicRefused(stop_line(RefusalBoard.read(board).refused))
    if failure:
        raise failure[0]


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
