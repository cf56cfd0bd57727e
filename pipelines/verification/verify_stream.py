"""`evpack verify-stream`: answers from a subscription verified as they arrive.

    evpack verify-stream --answers_subscription=projects/P/subscriptions/answers \\
        --prompts_subscription=projects/P/subscriptions/prompts-verify \\
        --bigquery_dataset=P.evpack [--prompt_ttl_seconds=604800]

The prompts subscription is a second subscription to the streaming job's
generation topic; the answers one receives one result line per message (any
format `evpack verify` reads). Rows go to `<dataset>.verifications`, dead
letters (unreadable messages, rejected rows) to `<dataset>.dead_letters`; both
tables are created when missing. See `transforms.verification.verify_stream` for the join.
"""

import sys

import apache_beam as beam
from apache_beam.io.gcp.pubsub import ReadFromPubSub
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.runner import PipelineResult

from pipelines.command import run_command
from pipelines.options.help import CommandHelp
from pipelines.options.runner import STREAMING_RUNNER, pin_local_runner
from pipelines.options.verify import VERIFY_STREAM_SECTIONS, resolve_verify_stream
from transforms.io.bigquery import WriteToBigQueryRows, create_audit_tables
from transforms.sinks import verification_row_id
from transforms.verification.verify_stream import VerifyAnswerStream


def build(p: beam.Pipeline, answers: str, prompts: str, dataset: str, ttl: int) -> None:
    """Compose the streaming verifier."""
    prompt_messages = p | "ReadPrompts" >> ReadFromPubSub(
        subscription=prompts, with_attributes=True
    )
    answer_messages = p | "ReadAnswers" >> ReadFromPubSub(
        subscription=answers, with_attributes=True
    )
    verified = answer_messages | "Verify" >> VerifyAnswerStream(prompt_messages, ttl)
    rejected = verified.rows | "WriteRows" >> WriteToBigQueryRows(
        f"{dataset}.verifications", row_id=verification_row_id
    )
    letters = (verified.dead_letters, rejected) | "AllDeadLetters" >> beam.Flatten()
    _ = letters | "WriteDeadLetters" >> WriteToBigQueryRows(f"{dataset}.dead_letters")


def run(argv: list[str] | None = None, *, wait: bool = True) -> PipelineResult:
    """Check the flags, create the tables, start the job; `wait=False` returns at once."""
    options = PipelineOptions(argv)
    options.view_as(StandardOptions).streaming = True
    settings = resolve_verify_stream(options)
    create_audit_tables(settings.dataset, ["verifications", "dead_letters"])
    pin_local_runner(options, STREAMING_RUNNER)
    pipeline = beam.Pipeline(options=options)
    build(
        pipeline, settings.answers, settings.prompts, settings.dataset, settings.prompt_ttl_seconds
    )
    result = pipeline.run()
    if wait:
        try:
            result.wait_until_finish()
        except KeyboardInterrupt:
            result.cancel()
    return result


def _run(argv: list[str]) -> int:
    run(argv)
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_command("evpack verify-stream", HELP, VERIFY_STREAM_SECTIONS, _run, argv)


HELP = CommandHelp(
    __doc__,
    required={
        "answers_subscription": "required",
        "prompts_subscription": "required",
        "bigquery_dataset": "required",
    },
    flags={"bigquery_dataset": "Dataset of the verifications table, <project>.<dataset>."},
    titles={"SinkOptions": "Where the rows go"},
)
"""What `evpack verify-stream --help` says beyond the flags' own text."""


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
