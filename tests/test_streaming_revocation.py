"""A grant revoked in the catalog while the job runs applies within the revocation delay.

Both streaming catalog modes: the file re-read every `--catalog_refresh_seconds`,
and the Bigtable table (written by `load_catalog`) behind a cache of that TTL.
"""

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from schemas import CatalogDocument
from tests.factories import candidate, document, request
from tests.stream_harness import Routes, drain, publish, query_until, streaming_job
from transforms.catalog.bigtable_table import TableAddress, create_table, load_catalog
from transforms.io.bigquery import bigquery_client

pytestmark = pytest.mark.emulators

REFRESH_SECONDS = 1.0

Writer = Callable[[list[CatalogDocument]], None]


def _file_catalog(tmp_path: Path, project: str) -> tuple[Writer, list[str]]:
    path = tmp_path / "catalog.jsonl"

    def write(documents: list[CatalogDocument]) -> None:
        """Replace the file atomically, as a catalog export should."""
        staging = path.with_suffix(".tmp")
        staging.write_text("".join(d.model_dump_json() + "\n" for d in documents))
        os.replace(staging, path)

    return write, [f"--catalog={path}"]


def _bigtable_catalog(tmp_path: Path, project: str) -> tuple[Writer, list[str]]:
    table = create_table(TableAddress(project, "evpack", "revoke"))

    def write(documents: list[CatalogDocument]) -> None:
        load_catalog(table, documents)

    flags = [
        "--catalog_mode=bigtable",
        f"--bigtable_project={project}",
        "--bigtable_instance=evpack",
        "--bigtable_table=revoke",
    ]
    return write, flags


@pytest.mark.parametrize("source", [_file_catalog, _bigtable_catalog], ids=["file", "bigtable"])
def test_revoked_group_is_unauthorized_after_the_delay(gcp_emulators, tmp_path, source) -> None:
    project = gcp_emulators.project
    write, catalog_flags = source(tmp_path, project)
    handbook = document("handbook")
    ledger = document("ledger", allowed_groups=("support", "finance"))
    write([handbook, ledger])
    name = f"revoke-{source.__name__.strip('_')}".replace("_", "-")
    dataset = f"audit_{source.__name__.strip('_')}"
    routes = Routes(project, name)
    routes.create()
    args = [
        *routes.job_args(dataset),
        *catalog_flags,
        f"--catalog_refresh_seconds={REFRESH_SECONDS}",
    ]
    cands = (
        candidate("e-handbook", "handbook", "Returns are accepted within 30 days of delivery."),
        candidate("e-ledger", "ledger", "The ledger closes on the fifth business day."),
    )
    with streaming_job(routes, args):
        publish(routes.topic("requests"), [request(*cands, request_id="before").model_dump_json()])
        (before,) = drain(routes.subscription("prompts"), 1)
        assert {e["evidence_id"] for e in before.json()["label_map"]} == {"e-handbook", "e-ledger"}

        write([handbook, ledger.model_copy(update={"allowed_groups": ("finance",)})])
        time.sleep(2 * REFRESH_SECONDS)  # the next request finds its entries older than the TTL
        publish(routes.topic("requests"), [request(*cands, request_id="after").model_dump_json()])
        (after,) = drain(routes.subscription("prompts"), 1)
        assert after.attributes["request_id"] == "after"
        assert {e["evidence_id"] for e in after.json()["label_map"]} == {"e-handbook"}

        rows = query_until(
            bigquery_client(project),
            f"SELECT request_id, evidence_id, reason FROM `{project}.{dataset}.exclusions`",
            lambda rows: len(rows) > 0,
        )
        assert [tuple(r.values()) for r in rows] == [("after", "e-ledger", "unauthorized")]
