"""Streaming, the manifests table dropped mid-run (every insert answered 404), on the real
emulators: the job neither stops with a traceback nor loses a row. Each later request's
manifest becomes one `bigquery_insert` dead letter naming the table, one warning says how
to recreate it, the prompts still go out, and the job keeps running."""

import json
import signal

import pytest

from tests.stream_harness import Routes, drain, publish, query_until
from tests.test_publish_faults import _job, _letters, _valid
from transforms.io.bigquery import bigquery_client

pytestmark = pytest.mark.emulators


def test_a_manifests_table_dropped_mid_stream_turns_its_rows_into_dead_letters(
    gcp_emulators, tmp_path
) -> None:
    routes = Routes(gcp_emulators.project, "dropped-manifests")
    routes.create()
    first, later = [f"d-f{i}" for i in range(3)], [f"d-l{i}" for i in range(3)]
    client = bigquery_client(gcp_emulators.project)
    table = f"{gcp_emulators.project}.audit_dropped_manifests.manifests"
    job = _job(routes, tmp_path / "job.log")
    try:
        publish(routes.topic("requests"), [_valid(r) for r in first])
        assert len(drain(routes.subscription("prompts"), len(first))) == len(first)
        query_until(client, f"SELECT request_id FROM `{table}`", lambda r: len(r) >= len(first))
        client.delete_table(table)
        publish(routes.topic("requests"), [_valid(r) for r in later])
        sent = drain(routes.subscription("prompts"), len(later))
        letters = _letters(routes.subscription("dead-letters"), len(later))
        assert job.poll() is None, "the job keeps running: the table is a sink, not the job"
    finally:
        if job.poll() is None:
            job.send_signal(signal.SIGTERM)
            job.wait(timeout=60)
    assert sorted(p.attributes["request_id"] for p in sent) == later  # prompts still go out
    assert sorted(d["request_id"] for d in letters) == later  # each row once, not lost
    assert all(d["stage"] == "bigquery_insert" and "manifests" in json.dumps(d) for d in letters)
    log = (tmp_path / "job.log").read_text()
    assert "Traceback" not in log, log[-3000:]
    gone = [line for line in log.splitlines() if f"table {table} is gone" in line]
    assert len(gone) == 1 and "evpack tables" in gone[0], log[-3000:]
