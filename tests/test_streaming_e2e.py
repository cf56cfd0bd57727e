"""The streaming job end to end on the real Pub/Sub and BigQuery emulators.

Publishes the sample requests (with malformed lines, a redelivered request and
a JSON-array message), then reads back the generation topic, the dead-letter
topic and the BigQuery audit tables.
"""

import json
import shutil
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from packer import BUILDER_VERSION
from schemas import CatalogDocument, Request
from tests.stream_harness import Routes, drain, publish, query_until, streaming_job
from transforms.bigquery_io import bigquery_client
from transforms.pubsub_io import split_payload
from transforms.stream_parse import parse_record

pytestmark = pytest.mark.emulators

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
MAX_RECORD_BYTES = 4 * 1024 * 1024


def _sample_messages() -> tuple[list[str], dict[str, Request], int, int]:
    """Messages to publish, the valid requests by id, how many records they hold, and how
    many of those records repeat a valid request_id."""
    lines = [line for line in (SAMPLES / "requests.jsonl").read_text().splitlines() if line.strip()]
    valid = [
        line for line in lines if not isinstance(parse_record("s", line, MAX_RECORD_BYTES), list)
    ]
    array = json.dumps([json.loads(valid[-1]), json.loads(valid[-2])])
    messages = [line for line in lines if line not in valid[-2:]]
    messages += [array, valid[0], valid[1]]  # one array message, two redeliveries
    requests: dict[str, Request] = {}
    records = repeats = 0
    for message in messages:
        for payload in split_payload(message.encode()):
            records += 1
            parsed = parse_record("s", payload, MAX_RECORD_BYTES)
            if not isinstance(parsed, list):
                repeats += parsed[0] in requests
                requests.setdefault(parsed[0], parsed[1][1])
    return messages, requests, records, repeats


def _allowed(doc: CatalogDocument, request: Request) -> bool:
    principal = request.principal
    return principal.user_id in doc.allowed_users or bool(
        set(principal.groups) & set(doc.allowed_groups)
    )


def test_samples_end_to_end(gcp_emulators, tmp_path) -> None:
    catalog = tmp_path / "catalog.jsonl"
    shutil.copy(SAMPLES / "catalog.jsonl", catalog)
    documents = {
        (d.tenant_id, d.document_id): d
        for d in map(CatalogDocument.model_validate_json, catalog.read_text().splitlines())
    }
    routes = Routes(gcp_emulators.project, "e2e")
    routes.create()
    args = [
        *routes.job_args("audit_e2e"),
        f"--catalog={catalog}",
        f"--config={SAMPLES / 'config.yaml'}",
        "--window_seconds=2",
        # The local source's watermark is the wall clock, so records stamped with an
        # earlier event-time attribute arrive late; the lateness keeps them counted.
        "--allowed_lateness_seconds=600",
    ]
    messages, requests, records, repeats = _sample_messages()
    event_time = datetime.now(UTC).replace(microsecond=0)
    with streaming_job(routes, args):
        publish(routes.topic("requests"), messages, event_time=event_time.isoformat())
        prompts = drain(routes.subscription("prompts"), len(requests))
        letters = drain(routes.subscription("dead-letters"), records - len(requests))

        # One prompt per distinct valid request, with its routing attributes.
        assert sorted(p.attributes["request_id"] for p in prompts) == sorted(requests)
        for prompt in prompts:
            body = prompt.json()
            assert prompt.attributes == {
                "request_id": body["request_id"],
                "tenant_id": requests[body["request_id"]].tenant_id,
                "builder_version": BUILDER_VERSION,
            }
        # Every other record is a dead letter with its reason: malformed ones and redeliveries.
        stages = Counter(letter.attributes["stage"] for letter in letters)
        assert sum(stages.values()) == records - len(requests)
        assert stages["dedupe"] == repeats >= 2
        assert stages["parse"] >= 1 and stages["validate"] >= 1
        assert all(letter.json()["error"] and letter.json()["payload"] for letter in letters)

        client = bigquery_client(gcp_emulators.project)
        dataset = f"{gcp_emulators.project}.audit_e2e"
        manifests = query_until(
            client, f"SELECT * FROM `{dataset}.manifests`", lambda r: len(r) >= len(requests)
        )
        assert sorted(m["request_id"] for m in manifests) == sorted(requests)
        excluded = sum(c["count"] for m in manifests for c in m["excluded"])
        exclusions = query_until(
            client, f"SELECT * FROM `{dataset}.exclusions`", lambda r: len(r) >= excluded
        )
        assert len(exclusions) == excluded

        excluded_per_request = Counter(e["request_id"] for e in exclusions)
        for manifest in manifests:
            request = requests[manifest["request_id"]]
            packed = sum(1 + len(e["derived_from"]) for e in manifest["evidence"])
            # Conservation: every candidate is packed or excluded exactly once.
            assert packed + excluded_per_request[request.request_id] == len(request.candidates)
            assert manifest["candidates_in"] == len(request.candidates)
            # Isolation: packed evidence is the tenant's own and allowed for the principal.
            for evidence in manifest["evidence"]:
                doc = documents[(request.tenant_id, evidence["document_id"])]
                assert _allowed(doc, request)
            if request.event_time is None and request.as_of is None:
                assert manifest["event_time"] == event_time
        assert all(e["tenant_id"] == requests[e["request_id"]].tenant_id for e in exclusions)
        assert {e["reason"] for e in exclusions} >= {"unauthorized", "superseded"}

        # Windowed counts sum to the exclusion rows once the windows have closed.
        expected = Counter((e["tenant_id"], e["reason"]) for e in exclusions)

        def counted(rows: list[dict]) -> Counter[tuple[str, str]]:
            total: Counter[tuple[str, str]] = Counter()
            for row in rows:
                total[(row["tenant_id"], row["reason"])] += row["count"]
            return total

        rows = query_until(
            client,
            f"SELECT * FROM `{dataset}.exclusion_counts`",
            lambda rows: counted(rows) == expected,
        )
        assert counted(rows) == expected
        assert all(r["window_end"] - r["window_start"] == timedelta(seconds=2) for r in rows)
