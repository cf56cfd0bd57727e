"""The duplicate window of a batch delivery, measured at 1,000 prompts on the Pub/Sub emulator.

A batch run with `--prompts_topic` is SIGKILLed while it publishes after its commit, at the
worst moment there is: the topic took a batch (one Publish request) whose answer never came
back (`tests.fault_proxy`'s `mute`), so nothing recorded it. The rerun with `--overwrite`
sends every prompt with no recorded message id. The consumer then counts what it got twice:
at most one batch (`transforms.delivery.BATCH`), each copy with the same `dedup_id`
(docs/outputs.md, *The duplicate window*). A kill anywhere else sends fewer twice: a batch
whose answer was recorded is not sent again, one the topic never took is sent once.
"""

import json
import time
from collections import Counter
from pathlib import Path

import pytest
from google.cloud import pubsub_v1

from schemas.request import Request
from tests.batch_run import SAMPLES, flags
from tests.fault_proxy import fault_proxy
from tests.fault_runs import WITHIN, port, start
from tests.stream_harness import Received, Routes, drain
from transforms.delivery import BATCH

pytestmark = pytest.mark.emulators

PROMPTS = 1000
RECORDED = 2
"""Batches delivered and recorded before the answers are lost."""


def _requests(path: Path) -> Path:
    """`PROMPTS` valid requests: the sample's, each under a fresh id, over and over."""
    valid = []
    for line in (SAMPLES / "requests.jsonl").read_text().splitlines():
        try:
            Request.model_validate_json(line)
        except ValueError:
            continue  # the sample's malformed lines: dead letters, not prompts
        valid.append(json.loads(line))
    with path.open("w") as out:
        for n in range(PROMPTS):
            row = {**valid[n % len(valid)]}
            row["request_id"] = f"{row['request_id']}-{n:04d}"
            out.write(json.dumps(row) + "\n")
    return path


def _taken(subscription: str, at_least: int, job) -> int:
    """How many messages the topic took, pulled from a watching subscription, once at
    least `at_least` (the job must still be running meanwhile)."""
    taken = 0
    deadline = time.monotonic() + WITHIN
    with pubsub_v1.SubscriberClient() as subscriber:
        while taken < at_least:
            assert job.poll() is None, job.communicate()
            assert time.monotonic() < deadline, f"the topic took {taken} of {at_least}"
            response = subscriber.pull(subscription=subscription, max_messages=100, timeout=10)
            acks = [m.ack_id for m in response.received_messages]
            if acks:
                subscriber.acknowledge(subscription=subscription, ack_ids=acks)
            taken += len(acks)
    return taken


def test_a_delivery_killed_before_recording_an_answer_sends_one_batch_twice(
    gcp_emulators, tmp_path
) -> None:
    routes = Routes(gcp_emulators.project, "killed-delivery")
    routes.create()
    topic, watching = routes.topic("prompts"), routes.subscription("watch")
    with pubsub_v1.SubscriberClient() as subscriber:
        subscriber.create_subscription(name=watching, topic=topic, ack_deadline_seconds=60)
    out = tmp_path / "run"
    argv = flags(_requests(tmp_path / "requests.jsonl"), out, f"--prompts_topic={topic}")
    with fault_proxy(port(f"http://{gcp_emulators.pubsub_host}")) as proxy:
        env = {"PUBSUB_EMULATOR_HOST": proxy.host}
        job = start(argv, env, 600)  # the publisher keeps waiting: the kill ends it
        taken = _taken(watching, RECORDED * BATCH, job)
        proxy.set("mute")  # the next Publish is carried out, its answer lost
        while taken < (_recorded(out) + 1) * BATCH:  # until the topic took the lost batch
            taken += _taken(watching, 1, job)
        job.kill()
        job.communicate()
        recorded = _recorded(out)
        assert taken == (recorded + 1) * BATCH

        proxy.set("pass")
        rerun = start([*argv, "--overwrite"], env)
        stdout, err = rerun.communicate(timeout=WITHIN * 3)
        assert rerun.returncode == 0, err[-3000:]
    got = drain(routes.subscription("prompts"), PROMPTS + BATCH)
    copies = Counter(m.attributes["request_id"] for m in got)
    twice = [request_id for request_id, n in copies.items() if n > 1]
    assert len(copies) == PROMPTS  # every request reached the consumer
    assert len(twice) == BATCH == len(got) - PROMPTS  # one batch, once more: the window
    assert f"sent again       {BATCH}" in stdout, stdout
    assert f"delivered        {PROMPTS - recorded * BATCH} to {topic}" in stdout, stdout
    assert all(len(_dedup_ids(got, request_id)) == 1 for request_id in twice)


def _recorded(out: Path) -> int:
    """How many batches the run recorded as delivered."""
    return len(list(out.glob("deliveries/deliveries-*")))


def _dedup_ids(got: list[Received], request_id: str) -> set[str]:
    return {m.attributes["dedup_id"] for m in got if m.attributes["request_id"] == request_id}
