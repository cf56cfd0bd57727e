"""Streaming verification: prompt and answer meet in keyed state, in either order."""

import json

import apache_beam as beam
import pytest
from apache_beam.io.gcp.pubsub import PubsubMessage
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.testing import test_stream
from apache_beam.testing.util import assert_that, equal_to

from schemas import PromptMessage
from schemas.prompt_formats import PromptLine, format_line
from tests.test_formats import PROMPT
from transforms.io.pubsub import prompt_message
from transforms.verification.verify_stream import VerifyAnswerStream


def _prompt(request_id: str) -> PubsubMessage:
    prompt = PromptMessage.model_validate({**PROMPT.model_dump(), "request_id": request_id})
    line = format_line(prompt, 100, "anthropic_batch")
    return prompt_message(
        PromptLine(request_id, "acme", "b", line, (("E1", "E2"),), ("sla",)), "run-1"
    )


def _answer(request_id: str, text: str) -> PubsubMessage:
    message = {"type": "message", "content": [{"type": "text", "text": text}]}
    result = {"custom_id": request_id, "result": {"type": "succeeded", "message": message}}
    return PubsubMessage(json.dumps(result).encode(), {})


def test_answers_meet_their_prompts_whatever_comes_first() -> None:
    good = "X and y [E1]. The sources do not cover sla."
    stream = (  # ("prompt" | "answer", message): q1's prompt first, q2's answer first
        test_stream.TestStream()
        .add_elements(
            [("prompt", _prompt("q1")), ("answer", _answer("q2", good))], event_timestamp=10
        )
        .add_elements(
            [
                ("answer", _answer("q1", "It cost 12 dollars [E1].")),
                ("answer", _answer("q2", "A retry [E1]. The sources do not cover sla.")),
            ],
            event_timestamp=20,
        )
        .add_elements([("answer", _answer("q1", "A retry: x and y [E1]."))], event_timestamp=25)
        .add_elements(
            [("answer", PubsubMessage(b"{oops", {})), ("prompt", _prompt("q2"))], event_timestamp=30
        )
        .add_elements([("answer", _answer("q9", good))], event_timestamp=40)
        .advance_watermark_to(40 + 7200)  # past the TTL: q9's answer waited in vain
        .add_elements(
            [("prompt", _prompt("q9"))], event_timestamp=40 + 7200
        )  # too late: no second row
        .advance_watermark_to_infinity()
    )
    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = True
    with beam.Pipeline(runner="BundleBasedDirectRunner", options=options) as p:
        messages = p | stream
        prompts = messages | "Prompts" >> beam.FlatMap(lambda m: [m[1]] if m[0] == "prompt" else [])
        answers = messages | "Answers" >> beam.FlatMap(lambda m: [m[1]] if m[0] == "answer" else [])
        verified = answers | VerifyAnswerStream(prompts, ttl_seconds=3600)
        assert_that(
            verified.rows
            | beam.Map(lambda r: (r.request_id, r.status, tuple(r.failed_checks), r.duplicate)),
            equal_to(
                [
                    (
                        "q1",
                        "succeeded",
                        ("figures_supported", "conflicts_reported", "uncovered_facets_declared"),
                        False,
                    ),
                    ("q1", "succeeded", ("conflicts_reported", "uncovered_facets_declared"), True),
                    ("q2", "succeeded", ("conflicts_reported",), False),
                    ("q2", "succeeded", ("conflicts_reported",), True),
                    (None, "no_prompt", (), False),
                ]
            ),
            label="rows",
        )
        assert_that(
            verified.dead_letters | beam.Map(lambda d: d.stage),
            equal_to(["answer"]),
            label="letters",
        )


def test_the_streaming_verifier_composes_and_checks_its_flags(capsys) -> None:
    from pipelines.verification import verify_stream

    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = True
    p = beam.Pipeline(runner="BundleBasedDirectRunner", options=options)
    subscription = "projects/evpack-test/subscriptions/{}"
    verify_stream.build(
        p, subscription.format("answers"), subscription.format("prompts"), "p.d", 60
    )
    labels = {t.full_label for t in p.transforms_stack[0].parts}
    assert {"ReadPrompts", "ReadAnswers", "Verify", "WriteRows", "WriteDeadLetters"} <= labels
    assert verify_stream.main(["--answers_subscription=nope", "--prompt_ttl_seconds=0"]) == 2
    assert "prompt_ttl_seconds must be positive" in capsys.readouterr().err


@pytest.mark.emulators
def test_streaming_verifier_on_the_emulators(gcp_emulators) -> None:
    """Prompt and answer messages through real Pub/Sub, rows read back from BigQuery."""
    import threading

    from google.cloud import pubsub_v1

    from pipelines.verification import verify_stream
    from tests.stream_harness import publish, query_until
    from transforms.io.bigquery import bigquery_client

    project = gcp_emulators.project
    topic = f"projects/{project}/topics/verify-{{}}"
    subscription = f"projects/{project}/subscriptions/verify-{{}}"
    publisher, subscriber = pubsub_v1.PublisherClient(), pubsub_v1.SubscriberClient()
    with subscriber:
        for kind in ("prompts", "answers"):
            publisher.create_topic(name=topic.format(kind))
            subscriber.create_subscription(name=subscription.format(kind), topic=topic.format(kind))
    dataset = f"{project}.verify_stream"
    result = verify_stream.run(
        [
            f"--answers_subscription={subscription.format('answers')}",
            f"--prompts_subscription={subscription.format('prompts')}",
            f"--bigquery_dataset={dataset}",
        ],
        wait=False,
    )
    try:
        prompt = _prompt("s1")
        publish(topic.format("prompts"), [prompt.data], **prompt.attributes)
        publish(topic.format("answers"), [_answer("s1", "It cost 12 dollars [E1].").data, b"{x"])
        rows = query_until(
            bigquery_client(project),
            f"SELECT request_id, status, failed_checks FROM `{dataset}.verifications`",
            lambda rows: len(rows) >= 1,
        )
    finally:
        stopper = threading.Thread(target=result.cancel, daemon=True)
        stopper.start()
        while stopper.is_alive():
            publish(topic.format("answers"), [b"{}"])
            stopper.join(timeout=2)
    assert [(r["request_id"], r["status"]) for r in rows] == [("s1", "succeeded")]
    assert "figures_supported" in rows[0]["failed_checks"]
