"""Poison messages and a killed job, on the real Pub/Sub and BigQuery emulators.

Every class of input that once crashed a job is published between valid
requests; the job (a separate process) is then killed with SIGKILL under a
backlog and started again. Counted at the end: every bad record is one dead
letter with its stage, no request_id gets two prompts (across the restart
too: re-published requests are dead-lettered as duplicates), and every valid
request has its prompt but at most the few the local reader had acknowledged
and not yet written when it was killed (`LOSS_LIMIT`, see docs/streaming.md).
"""

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from google.cloud import pubsub_v1

from packer.parsing.request_records import parse_record
from pipelines.streaming import LOCAL_PULL_MESSAGES
from tests.stream_harness import Received, Routes, publish, query_until
from transforms.io.bigquery import bigquery_client

pytestmark = pytest.mark.emulators

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
BACKLOG = 120
LOSS_LIMIT = LOCAL_PULL_MESSAGES
"""Beam's local Pub/Sub reader acknowledges each pull (10 messages) before the
pipeline has written anything; a kill loses at most what it had pulled."""


def _valid(request_id: str) -> dict:
    for line in (SAMPLES / "requests.jsonl").read_text().splitlines():
        if line.strip() and not isinstance(parse_record("s", line, 1 << 22), list):
            return json.loads(line) | {"request_id": request_id}
    raise AssertionError("no valid sample request")


def _poison() -> list[tuple[bytes, dict[str, str], str]]:
    """(message, attributes, stage of its one dead letter) for every hostile class."""
    base = _valid("p")
    broken = [base["candidates"][0] | {"title": "\udfff"}]

    def request(**fields: object) -> bytes:
        return json.dumps(base | fields).encode()

    return [
        (b'{"request_id": "bad-utf8", "question": "\xff"}', {}, "parse"),
        (b"[" * 1000 + b"]" * 1000, {}, "parse"),
        (b'{"request_id": "bad-int", "x": ' + b"7" * 4301 + b"}", {}, "parse"),
        (b'{"request_id": "bad-nan", "x": NaN}', {}, "parse"),
        (b'{"request_id": "bad-dup", "request_id": "other"}', {}, "parse"),
        (b"\xef\xbb\xbf not json at all", {}, "parse"),
        (request(request_id="\ud800"), {}, "parse"),
        (request(request_id="p-title", candidates=broken), {}, "validate"),
        (request(request_id="p-budget", budget={"input_limit": 2**63}), {}, "validate"),
        (request(request_id="p-late", as_of="9999-12-31T23:00:00-05:00"), {}, "validate"),
        (request(request_id="p-early", event_time="0001-01-01T00:00:00+01:00"), {}, "validate"),
        (request(request_id="p-long", question="why? " * 4000), {}, "pack"),
        (request(request_id="p-attr"), {"event_time": "yesterday"}, "parse"),
        (b'{"request_id": "p-huge", "pad": "' + b"x" * (9 * 1024 * 1024) + b'"}', {}, "parse"),
        (b"[" * 2000, {}, "parse"),
        (b'"' + b'\\"' * (1 << 20), {}, "parse"),
        (json.dumps([0] * 1001).encode(), {}, "parse"),
        (request(request_id="p-far"), {"event_time": "253402300800000"}, "parse"),
        (request(request_id="p-bool", budget={"input_limit": True}), {}, "validate"),
        (request(request_id="p-epoch", as_of=1782864000), {}, "validate"),
    ]  # fmt: skip


def _start(routes: Routes, tmp: Path, log: str) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable,
        "-m",
        "pipelines.streaming",
        *routes.job_args("audit_poison"),
        f"--catalog={SAMPLES / 'catalog.jsonl'}",
        f"--config={SAMPLES / 'config.yaml'}",
    ]
    with open(tmp / log, "wb") as out:
        return subprocess.Popen(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)


def _pull(subscription: str, until: int, idle_seconds: float) -> list[Received]:
    """Pull and ack until `until` messages came, or none came for `idle_seconds`."""
    got: list[Received] = []
    quiet_since = time.monotonic()
    with pubsub_v1.SubscriberClient() as subscriber:
        while len(got) < until and time.monotonic() - quiet_since < idle_seconds:
            response = subscriber.pull(subscription=subscription, max_messages=100, timeout=5)
            messages = response.received_messages
            if messages:
                quiet_since = time.monotonic()
                ids = [m.ack_id for m in messages]
                subscriber.acknowledge(subscription=subscription, ack_ids=ids)
                got += [Received(m.message.data, dict(m.message.attributes)) for m in messages]
    return got


def test_poison_and_a_kill_under_backlog(gcp_emulators, tmp_path: Path) -> None:
    routes = Routes(gcp_emulators.project, "poison")
    routes.create()
    requests_topic = routes.topic("requests")
    poison = _poison()
    first = [f"a{i:02d}" for i in range(len(poison))]
    publisher = pubsub_v1.PublisherClient()
    for request_id, (data, attributes, _) in zip(first, poison, strict=True):
        publish(requests_topic, [json.dumps(_valid(request_id))])
        publisher.publish(requests_topic, data, **attributes).result(timeout=60)
    # A JSON array message: one valid request and one with a lone surrogate id.
    publish(requests_topic, [json.dumps([_valid("a-array"), _valid("\ud800")])])
    first.append("a-array")
    expected_stages = Counter(stage for _, _, stage in poison) + Counter({"parse": 1})

    job = _start(routes, tmp_path, "first.log")
    try:
        prompts = _pull(routes.subscription("prompts"), len(first), idle_seconds=90)
        letters = _pull(routes.subscription("dead-letters"), expected_stages.total(), 30)
        client = bigquery_client(gcp_emulators.project)
        query_until(
            client,
            f"SELECT request_id FROM `{gcp_emulators.project}.audit_poison.manifests`",
            lambda rows: len(rows) >= len(first),
        )
        # A backlog: new requests, and copies of some already packed.
        backlog = [f"b{i:03d}" for i in range(BACKLOG)]
        again = first[:5]
        publish(requests_topic, [json.dumps(_valid(r)) for r in [*backlog, *again]])
        prompts += _pull(routes.subscription("prompts"), 1, idle_seconds=60)
    finally:
        job.send_signal(signal.SIGKILL)
        job.wait()
    job = _start(routes, tmp_path, "second.log")
    try:
        # Wait on the counts, not the clock: first all but the few a kill may lose (the
        # idle bound covers the restart), then the rest with a short bound, then a settle
        # on each subscription that would still catch a late second prompt of one request
        # or an unexpected dead letter.
        def missing() -> int:
            return len(set(backlog) - {p.attributes["request_id"] for p in prompts})

        prompts += _pull(routes.subscription("prompts"), missing() - LOSS_LIMIT, 90)
        prompts += _pull(routes.subscription("prompts"), missing(), idle_seconds=10)
        letters += _pull(routes.subscription("dead-letters"), len(again), idle_seconds=30)
        prompts += _pull(routes.subscription("prompts"), 1 << 20, idle_seconds=5)
        letters += _pull(routes.subscription("dead-letters"), 1 << 20, idle_seconds=5)
    finally:
        job.send_signal(signal.SIGTERM)
        job.wait(timeout=60)

    per_id = Counter(p.attributes["request_id"] for p in prompts)
    assert max(per_id.values()) == 1, [r for r, n in per_id.items() if n > 1]
    assert set(first) <= set(per_id)  # all packed before the kill
    lost = sorted(set(backlog) - set(per_id))
    print(f"requests lost to the kill under a backlog of {BACKLOG}: {len(lost)} {lost}")
    assert len(lost) <= LOSS_LIMIT
    bodies = [json.loads(m.data) for m in letters]
    dedupe = [d for d in bodies if d["stage"] == "dedupe"]
    assert sorted(d["request_id"] for d in dedupe) == sorted(again)
    others = Counter(d["stage"] for d in bodies if d["stage"] != "dedupe")
    assert others == expected_stages, [(d["stage"], d["error"][:80]) for d in bodies]
    assert all(len(m.data) < 10 * 1024 * 1024 for m in letters)
    huge = next(d for d in bodies if "p-huge" in d["payload"])
    assert "exceeds --max_record_bytes=4194304" in huge["error"]
