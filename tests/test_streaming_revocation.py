"""A grant revoked in the catalog file while the job runs applies without a restart."""

import os
import time
from pathlib import Path

import pytest

from schemas import CatalogDocument
from tests.factories import candidate, document, request
from tests.stream_harness import Routes, drain, publish, query_until, streaming_job
from transforms.bigquery_io import bigquery_client

pytestmark = pytest.mark.emulators

REFRESH_SECONDS = 1.0


def _write_catalog(path: Path, documents: list[CatalogDocument]) -> None:
    """Replace the file atomically, as a catalog export should."""
    staging = path.with_suffix(".tmp")
    staging.write_text("".join(d.model_dump_json() + "\n" for d in documents))
    os.replace(staging, path)


def test_revoked_group_is_unauthorized_after_the_refresh(gcp_emulators, tmp_path) -> None:
    catalog = tmp_path / "catalog.jsonl"
    handbook = document("handbook")
    ledger = document("ledger", allowed_groups=("support", "finance"))
    _write_catalog(catalog, [handbook, ledger])
    routes = Routes(gcp_emulators.project, "revoke")
    routes.create()
    args = [
        *routes.job_args("audit_revoke"),
        f"--catalog={catalog}",
        f"--catalog_refresh_seconds={REFRESH_SECONDS}",
    ]
    cands = (candidate("e-handbook", "handbook"), candidate("e-ledger", "ledger"))
    with streaming_job(routes, args):
        publish(routes.topic("requests"), [request(*cands, request_id="before").model_dump_json()])
        (before,) = drain(routes.subscription("prompts"), 1)
        assert {e["evidence_id"] for e in before.json()["label_map"]} == {"e-handbook", "e-ledger"}

        _write_catalog(
            catalog, [handbook, ledger.model_copy(update={"allowed_groups": ("finance",)})]
        )
        time.sleep(2 * REFRESH_SECONDS)  # the next request finds a snapshot older than the interval
        publish(routes.topic("requests"), [request(*cands, request_id="after").model_dump_json()])
        (after,) = drain(routes.subscription("prompts"), 1)
        assert after.attributes["request_id"] == "after"
        assert {e["evidence_id"] for e in after.json()["label_map"]} == {"e-handbook"}

        rows = query_until(
            bigquery_client(gcp_emulators.project),
            "SELECT request_id, evidence_id, reason "
            f"FROM `{gcp_emulators.project}.audit_revoke.exclusions`",
            lambda rows: len(rows) > 0,
        )
        assert [tuple(r.values()) for r in rows] == [("after", "e-ledger", "unauthorized")]
