"""Pub/Sub refusing or out of reach, in both jobs, on the real emulators.

Every request ends with exactly one of a delivered prompt or a `publish` dead
letter, the manifests hold exactly the delivered ones, and a restart or
rerun after the fix delivers the rest once. The refusals: a topic deleted
(the emulator's own NotFound), a prompt over Pub/Sub's message limit (refused
before sending, as the service would), a topic the job may not publish to
(`tests.forbidden_topic`, a fake: the emulator enforces no IAM), and a closed
port standing for an unreachable service.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from apache_beam.io.gcp.pubsub import PubsubMessage
from google.cloud import pubsub_v1

from packer.parsing.request_records import parse_record
from pipelines.batch import main as batch_main
from tests.batch_run import SAMPLES, flags
from tests.emulators import free_port
from tests.forbidden_topic import FORBIDDEN_ENV, ForbiddenPublisher
from tests.stream_harness import Routes, drain, publish, query_until
from transforms.io.bigquery import bigquery_client
from transforms.io.publish import MESSAGE_BYTES, Publisher, Refusal

pytestmark = pytest.mark.emulators

ROOT = Path(__file__).resolve().parent.parent


def _valid(request_id: str) -> str:
    for line in (SAMPLES / "requests.jsonl").read_text().splitlines():
        if line.strip() and not isinstance(parse_record("s", line, 1 << 22), list):
            return json.dumps(json.loads(line) | {"request_id": request_id})
    raise AssertionError("no valid sample request")


def test_publisher_outcome_per_message(gcp_emulators, tmp_path, monkeypatch) -> None:
    routes = Routes(gcp_emulators.project, "outcomes")
    routes.create()
    topic = routes.topic("prompts")
    small = PubsubMessage(b"fits", {"request_id": "a"})
    huge = PubsubMessage(b"x" * MESSAGE_BYTES, {"request_id": "b"})
    outcomes = Publisher(topic, 5).publish([small, huge, small])
    assert isinstance(outcomes[0], str) and isinstance(outcomes[2], str)
    assert isinstance(outcomes[1], Refusal) and not outcomes[1].topic_wide
    assert "over Pub/Sub's 10000000-byte limit" in outcomes[1].reason
    assert len(drain(routes.subscription("prompts"), 2, seconds=20)) == 2

    pubsub_v1.PublisherClient().delete_topic(topic=topic)
    gone = Publisher(topic, 5).publish([small, small])
    assert all(isinstance(o, Refusal) and o.cause == "NotFound" for o in gone)

    forbid = tmp_path / "forbidden"
    forbid.write_text(routes.topic("dead-letters"))
    monkeypatch.setenv(FORBIDDEN_ENV, str(forbid))
    forbidden = Publisher(routes.topic("dead-letters"), 5, ForbiddenPublisher())
    refused = forbidden.publish([small])
    assert isinstance(refused[0], Refusal) and refused[0].cause == "PermissionDenied"

    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", f"127.0.0.1:{free_port()}")  # nothing listens
    started = time.monotonic()
    down = Publisher(topic, 2).publish([small, small])
    assert time.monotonic() - started < 10
    assert all(isinstance(o, Refusal) and o.cause == "unreachable" for o in down)
    assert "--sink_timeout_seconds=2" in down[0].reason


def _job(routes: Routes, log: Path, module: str = "pipelines.streaming") -> subprocess.Popen:
    argv = [
        sys.executable,
        "-m",
        module,
        *routes.job_args(f"audit_{routes.name.replace('-', '_')}"),
        f"--catalog={SAMPLES / 'catalog.jsonl'}",
        f"--config={SAMPLES / 'config.yaml'}",
    ]
    with open(log, "wb") as out:
        return subprocess.Popen(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)


def _letters(subscription: str, count: int) -> list[dict]:
    return [m.json() for m in drain(subscription, count, seconds=60)]


@pytest.mark.parametrize("fault", ["deleted", "forbidden"])
def test_stream_prompts_topic_refused_mid_run(gcp_emulators, tmp_path, fault, monkeypatch) -> None:
    routes = Routes(gcp_emulators.project, f"refused-{fault}")
    routes.create()
    requests_topic, prompts_topic = routes.topic("requests"), routes.topic("prompts")
    first = [f"{fault}-f{i}" for i in range(4)]
    later = [f"{fault}-l{i}" for i in range(4)]
    module = "pipelines.streaming" if fault == "deleted" else "tests.forbidden_topic"
    forbid = tmp_path / "forbidden"
    monkeypatch.setenv(FORBIDDEN_ENV, str(forbid))
    job = _job(routes, tmp_path / "first.log", module=module)
    try:
        publish(requests_topic, [_valid(r) for r in first])
        delivered = drain(routes.subscription("prompts"), len(first))
        assert sorted(p.attributes["request_id"] for p in delivered) == first
        client = bigquery_client(gcp_emulators.project)
        dataset = f"{gcp_emulators.project}.audit_{routes.name.replace('-', '_')}"
        manifests_sql = f"SELECT request_id FROM `{dataset}.manifests`"
        query_until(client, manifests_sql, lambda rows: len(rows) >= len(first))
        if fault == "deleted":
            pubsub_v1.PublisherClient().delete_topic(topic=prompts_topic)
        else:  # the permission revoked mid-run (the fake reads the file at each call)
            forbid.write_text(prompts_topic)
        publish(requests_topic, [_valid(r) for r in later])
        assert job.wait(timeout=240) == 1, "the job stops once the refused prompts are letters"
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    log = (tmp_path / "first.log").read_text()
    stop = [line for line in log.splitlines() if line.startswith("evpack stream: ")]
    assert len(stop) == 1 and prompts_topic in stop[0], log[-3000:]
    assert ("NotFound" if fault == "deleted" else "PermissionDenied") in stop[0]

    letters = _letters(routes.subscription("dead-letters"), len(later))
    refused = [d for d in letters if d["stage"] == "publish"]
    assert sorted(d["request_id"] for d in refused) == later  # each one dead letter, once
    kept = json.loads(refused[0]["payload"])
    assert kept["attributes"]["request_id"] in later and kept["data"].startswith("{")
    client = bigquery_client(gcp_emulators.project)
    rows = [r["request_id"] for r in client.query(manifests_sql).result()]
    assert sorted(rows) == first  # no manifest for a prompt the queue does not have

    # The fix: the topic back (with a new subscription), the permission granted; then the
    # refused requests are sent again, with copies of the delivered ones.
    forbid.unlink(missing_ok=True)
    if fault == "deleted":
        pubsub_v1.PublisherClient().create_topic(name=prompts_topic)
    with pubsub_v1.SubscriberClient() as subscriber:
        subscriber.create_subscription(
            name=routes.subscription("prompts-2"), topic=prompts_topic, ack_deadline_seconds=60
        )
    job = _job(routes, tmp_path / "second.log")
    try:
        publish(requests_topic, [_valid(r) for r in [*later, *first]])
        again = drain(routes.subscription("prompts-2"), len(later))
        letters = _letters(routes.subscription("dead-letters"), len(first))
    finally:
        job.send_signal(signal.SIGTERM)
        job.wait(timeout=60)
    assert sorted(p.attributes["request_id"] for p in again) == later  # the rest, once
    dedupe = sorted(d["request_id"] for d in letters if d["stage"] == "dedupe")
    assert dedupe == first  # the delivered ones are not packed twice
    rows = query_until(client, manifests_sql, lambda rows: len(rows) >= len(first + later))
    assert sorted(r["request_id"] for r in rows) == sorted(first + later)


def test_stream_start_fails_on_an_unreachable_sink(gcp_emulators, tmp_path) -> None:
    routes = Routes(gcp_emulators.project, "unreachable")
    env = {**os.environ, "PUBSUB_EMULATOR_HOST": f"127.0.0.1:{free_port()}"}
    argv = [
        sys.executable,
        "-m",
        "pipelines.streaming",
        *routes.job_args("audit_unreachable"),
        f"--catalog={SAMPLES / 'catalog.jsonl'}",
        "--sink_timeout_seconds=2",
    ]
    started = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr[-2000:]
    assert time.monotonic() - started < 60
    line = done.stderr.strip().splitlines()[-1]
    assert "--prompts_topic" in line and "could not be reached" in line, done.stderr[-2000:]


def _rows(folder: Path, pattern: str) -> list[dict]:
    return [json.loads(line) for p in folder.glob(pattern) for line in p.read_text().splitlines()]


def _batch(tmp_path: Path, topic: str, *extra: str) -> int:
    return batch_main(
        flags(SAMPLES / "requests.jsonl", tmp_path / "run", f"--prompts_topic={topic}", *extra)
    )


def test_batch_delivers_after_commit_once_across_reruns(
    gcp_emulators, tmp_path, monkeypatch, capsys
) -> None:
    routes = Routes(gcp_emulators.project, "batch-delivery")
    routes.create()
    topic = routes.topic("prompts")

    # Refused by the dead-letter gate: nothing is published.
    assert _batch(tmp_path, topic, "--max_dead_letter_percent=1") == 1
    assert "--max_dead_letter_percent" in capsys.readouterr().err
    assert drain(routes.subscription("prompts"), 0, seconds=5) == []

    # The topic refuses every prompt (the fake): committed, each prompt a publish letter.
    monkeypatch.setattr(pubsub_v1, "PublisherClient", ForbiddenPublisher)
    forbid = tmp_path / "forbidden"
    forbid.write_text(topic)
    monkeypatch.setenv(FORBIDDEN_ENV, str(forbid))
    assert _batch(tmp_path, topic, "--overwrite") == 1
    err = capsys.readouterr().err
    assert "not delivered to --prompts_topic" in err and "PermissionDenied" in err
    outbox = _rows(tmp_path / "run" / "outbox", "outbox-*.jsonl")
    letters = _rows(tmp_path / "run" / "deliveries", "dead_letters-*.jsonl")
    assert sorted(d["request_id"] for d in letters) == sorted(p["request_id"] for p in outbox)
    assert {d["stage"] for d in letters} == {"publish"}
    assert {json.loads(d["payload"])["data"] for d in letters} == {p["line"] for p in outbox}

    # After the fix, a rerun delivers every prompt once, and the next one none again.
    forbid.unlink()
    assert _batch(tmp_path, topic, "--overwrite") == 0
    out = capsys.readouterr().out
    assert f"delivered        {len(outbox)} to {topic}" in out
    prompts = drain(routes.subscription("prompts"), len(outbox))
    assert sorted(p.attributes["request_id"] for p in prompts) == sorted(
        p["request_id"] for p in outbox
    )
    assert {p.attributes["prompt_sha256"] for p in prompts} == {p["prompt_sha256"] for p in outbox}
    assert len({p.attributes["run_id"] for p in prompts}) == 1
    delivered = _rows(tmp_path / "run" / "deliveries", "deliveries-*.jsonl")
    assert sorted(d["message_id"] is not None for d in delivered) == [True] * len(outbox)
    assert {d["request_id"] for d in delivered} == {p["request_id"] for p in outbox}
    assert _batch(tmp_path, topic, "--overwrite") == 0
    out = capsys.readouterr().out
    assert f"duplicates       {len(outbox)} (delivered by an earlier run" in out
    rows = _rows(tmp_path / "run" / "deliveries", "deliveries-*.jsonl")
    assert sorted(d["outcome"] for d in rows) == sorted(
        ["delivered"] * len(outbox) + ["duplicate"] * len(outbox)
    )
    assert "delivered        0" in out
    assert drain(routes.subscription("prompts"), 0, seconds=5) == []


@pytest.mark.parametrize("sink", ["prompts_topic", "bigquery_dataset"])
def test_batch_fails_in_bounded_time_on_an_unreachable_sink(
    gcp_emulators, tmp_path, monkeypatch, capsys, sink
) -> None:
    closed = f"127.0.0.1:{free_port()}"  # nothing listens there
    if sink == "prompts_topic":
        monkeypatch.setenv("PUBSUB_EMULATOR_HOST", closed)
    else:
        monkeypatch.setenv("BIGQUERY_EMULATOR_HOST", f"http://{closed}")
    topic = f"projects/{gcp_emulators.project}/topics/nowhere"
    dataset = f"--bigquery_dataset={gcp_emulators.project}.nowhere"
    extra = ["--sink_timeout_seconds=2"] + ([dataset] if sink == "bigquery_dataset" else [])
    started = time.monotonic()
    if sink == "prompts_topic":
        assert _batch(tmp_path, topic, *extra) == 1
    else:
        assert batch_main(flags(SAMPLES / "requests.jsonl", tmp_path / "run", *extra)) == 1
    assert time.monotonic() - started < 60
    err = capsys.readouterr().err
    assert f"--{sink} " in err and "could not be reached within" in err, err[-2000:]
    assert not (tmp_path / "run" / "manifests").exists()  # refused before the run
