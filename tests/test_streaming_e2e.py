"""The streaming job end to end on the real Pub/Sub and BigQuery emulators.

Publishes the sample requests (with malformed lines, a redelivered request and
a JSON-array message), then reads back the generation topic, the dead-letter
topic and the BigQuery audit tables.
"""

import json
import re
import shutil
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from packer import BUILDER_VERSION
from packer.parsing.request_records import parse_record
from schemas import CatalogDocument, Request
from tests.stream_harness import Routes, drain, publish, query_until, streaming_job
from transforms.io.bigquery import bigquery_client
from transforms.io.pubsub import split_payload

pytestmark = pytest.mark.emulators

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
MAX_RECORD_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Samples:
    """The messages to publish and what they must produce."""

    messages: list[str]
    requests: dict[str, Request]  # the first valid record of each request_id
    records: int  # requests inside all messages (an array message holds several)
    rejected: Counter[tuple[str, str, str]]  # (stage, error, payload) of malformed records
    repeats: Counter[str]  # request_id -> later valid copies


def _samples() -> Samples:
    """The sample request lines, two of them as one array message, two redelivered."""
    lines = [line for line in (SAMPLES / "requests.jsonl").read_text().splitlines() if line.strip()]
    valid = [
        line for line in lines if not isinstance(parse_record("s", line, MAX_RECORD_BYTES), list)
    ]
    array = json.dumps([json.loads(valid[-1]), json.loads(valid[-2])])
    messages = [line for line in lines if line not in valid[-2:]]
    messages += [array, valid[0], valid[1]]
    requests: dict[str, Request] = {}
    rejected: Counter[tuple[str, str, str]] = Counter()
    repeats: Counter[str] = Counter()
    records = 0
    for message in messages:
        for payload in split_payload(message.encode(), MAX_RECORD_BYTES):
            records += 1
            parsed = parse_record("s", payload, MAX_RECORD_BYTES)
            if isinstance(parsed, list):
                rejected.update((d.stage, d.error, d.payload) for d in parsed)
            elif parsed[0] in requests:
                repeats[parsed[0]] += 1
            else:
                requests[parsed[0]] = parsed[1][1]
    return Samples(messages, requests, records, rejected, repeats)


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
    samples = _samples()
    requests = samples.requests
    event_time = datetime.now(UTC).replace(microsecond=0)
    with streaming_job(routes, args):
        publish(routes.topic("requests"), samples.messages, event_time=event_time.isoformat())
        prompts = drain(routes.subscription("prompts"), len(requests))
        expected_letters = samples.records - len(requests)
        letters = [m.json() for m in drain(routes.subscription("dead-letters"), expected_letters)]

        # One prompt per distinct valid request, with its routing attributes.
        assert sorted(p.attributes["request_id"] for p in prompts) == sorted(requests)
        for prompt in prompts:
            body = prompt.json()
            routing = {
                k: prompt.attributes[k] for k in ("request_id", "tenant_id", "builder_version")
            }
            assert routing == {
                "request_id": body["request_id"],
                "tenant_id": requests[body["request_id"]].tenant_id,
                "builder_version": BUILDER_VERSION,
            }
            assert set(prompt.attributes) == {
                *routing,
                "conflicts",
                "uncovered_facets",
                "run_id",
                "prompt_sha256",
                "dedup_id",
            }
            assert len(prompt.attributes["prompt_sha256"]) == 64
            run_id = prompt.attributes["run_id"]
            assert prompt.attributes["dedup_id"] == f"{run_id}:{body['request_id']}"
        # Every other record is a dead letter: each malformed one with its stage and
        # reason, each redelivery as a duplicate of its request_id.
        assert len(letters) == expected_letters
        malformed = [d for d in letters if d["stage"] != "dedupe"]
        duplicates = [d for d in letters if d["stage"] == "dedupe"]
        assert (
            Counter((d["stage"], d["error"], d["payload"]) for d in malformed) == samples.rejected
        )
        assert Counter(d["request_id"] for d in duplicates) == samples.repeats
        assert {stage for stage, _, _ in samples.rejected} == {"parse", "validate"}
        assert samples.repeats.total() >= 2

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
        # Every audit row and dead letter names the one run of the job that wrote it.
        (run_id,) = {r["run_id"] for r in (*manifests, *exclusions, *rows, *letters)}
        assert run_id is not None and re.fullmatch(r"\d{8}T\d{6}-[0-9a-f]{8}", run_id)
