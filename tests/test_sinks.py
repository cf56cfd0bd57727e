"""Sinks are choices in both jobs: batch to BigQuery and Pub/Sub, streaming to windowed files.

On the real emulators. The batch run with service sinks must hold the same rows
as the same run with files; the streaming run without a dataset writes its
audit rows as Parquet files, one set per window, read back with pyarrow.
"""

import glob
import time

import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.batch import run as run_batch
from pipelines.options.sinks import SinkOptions, resolve_sinks
from tests.batch_run import SAMPLES, flags, read_outputs, run_test_pipeline
from tests.factories import candidate, document, request
from tests.stream_harness import Routes, drain, publish, streaming_job
from transforms.io.bigquery import InsertRows, LoadJobRows, bigquery_client
from transforms.io.row_files import FileRows
from transforms.sinks import AUDIT_SINKS, Sinks, audit_sink

pytestmark = pytest.mark.emulators


def test_batch_writes_audit_rows_to_bigquery_and_prompts_to_a_topic(
    gcp_emulators, tmp_path
) -> None:
    project = gcp_emulators.project
    routes = Routes(project, "batch-sinks")
    routes.create()
    requests = SAMPLES / "requests.jsonl"
    run_test_pipeline(flags(requests, tmp_path / "files"))
    files = read_outputs(tmp_path / "files")
    services = run_batch(  # through the job's start: it creates the dataset and tables
        flags(
            requests,
            tmp_path / "services",
            f"--bigquery_dataset={project}.batch_audit",
            f"--prompts_topic={routes.topic('prompts')}",
        )
    )
    client = bigquery_client(project)
    for table, rows in (("manifests", files.manifests), ("exclusions", files.exclusions)):
        found = client.query(
            f"SELECT request_id, tenant_id FROM `{project}.batch_audit.{table}`"
        ).result()
        assert sorted((r["request_id"], r["tenant_id"]) for r in found) == sorted(
            (r["request_id"], r["tenant_id"]) for r in rows
        ), table
    versions = client.query(
        f"SELECT request_id, catalog_version FROM `{project}.batch_audit.manifests`"
    ).result()
    assert {r["request_id"]: r["catalog_version"] for r in versions} == {
        r["request_id"]: r["catalog_version"] for r in files.manifests
    }
    letters = client.query(f"SELECT stage FROM `{project}.batch_audit.dead_letters`").result()
    assert sorted(r["stage"] for r in letters) == sorted(r["stage"] for r in files.dead_letters)
    prompts = drain(routes.subscription("prompts"), len(files.prompts))
    assert sorted((p.json() for p in prompts), key=lambda m: m["request_id"]) == files.prompts
    assert not glob.glob(f"{tmp_path}/services/manifests/*"), "audit rows went to BigQuery"
    assert "manifests" not in services.summary.outputs  # the summary names only files written
    assert "prompts" not in services.summary.outputs


def test_streaming_writes_audit_rows_as_windowed_parquet(gcp_emulators, tmp_path) -> None:
    catalog = tmp_path / "catalog.jsonl"
    catalog.write_text(document("handbook").model_dump_json() + "\n")
    routes = Routes(gcp_emulators.project, "stream-files")
    routes.create()
    out = tmp_path / "audit"
    args = [
        f"--subscription={routes.subscription('requests')}",
        f"--prompts_topic={routes.topic('prompts')}",
        f"--dead_letter_topic={routes.topic('dead-letters')}",
        f"--output={out}",
        f"--catalog={catalog}",
        "--window_seconds=1",
    ]
    cands = (candidate("e-handbook", "handbook"), candidate("e-gone", "gone"))
    with streaming_job(routes, args):
        publish(routes.topic("requests"), [request(*cands, request_id="q-files").model_dump_json()])
        (prompt,) = drain(routes.subscription("prompts"), 1)
        assert prompt.attributes["request_id"] == "q-files"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (
            glob.glob(f"{out}/manifests/*.parquet") and glob.glob(f"{out}/exclusions/*.parquet")
        ):
            time.sleep(1)
    manifests = [
        r for f in glob.glob(f"{out}/manifests/*.parquet") for r in pq.read_table(f).to_pylist()
    ]
    exclusions = [
        r for f in glob.glob(f"{out}/exclusions/*.parquet") for r in pq.read_table(f).to_pylist()
    ]
    assert [m["request_id"] for m in manifests] == ["q-files"]
    assert manifests[0]["catalog_version"]
    assert [(x["evidence_id"], x["reason"]) for x in exclusions] == [("e-gone", "unknown_document")]


@pytest.mark.parametrize(
    ("dataset", "load_jobs", "backend"),
    [
        (None, False, FileRows),
        (None, True, FileRows),
        ("p.evpack", False, InsertRows),
        ("p.evpack", True, LoadJobRows),
    ],
)
def test_the_flags_pick_one_registered_backend(
    dataset: str | None, load_jobs: bool, backend: type
) -> None:
    sinks = Sinks(output="out", dataset=dataset, prompts_topic=None, load_jobs=load_jobs)
    assert isinstance(AUDIT_SINKS[audit_sink(sinks)](sinks), backend)


def _resolved(tmp_path, *extra: str, window_seconds: int | None = None) -> Sinks:
    options = PipelineOptions([f"--output={tmp_path / 'out'}", *extra])
    return resolve_sinks(options, window_seconds=window_seconds)


def test_audit_sink_names_the_backend_over_what_the_locations_imply(tmp_path) -> None:
    dataset = "--bigquery_dataset=p.evpack"
    assert audit_sink(_resolved(tmp_path, dataset)) == "bigquery_inserts"
    chosen = _resolved(tmp_path, dataset, "--audit_sink=files")
    assert isinstance(AUDIT_SINKS[audit_sink(chosen)](chosen), FileRows)


@pytest.mark.parametrize(
    ("extra", "window_seconds", "said"),
    [
        (("--audit_sink=bigquery_inserts",), None, "--bigquery_dataset"),
        (("--audit_sink=bigquery_load_jobs", "--bigquery_dataset=p.evpack"), 60, "batch jobs"),
    ],
)
def test_a_chosen_backend_asks_before_the_run_for_what_it_needs(
    tmp_path, extra: tuple[str, ...], window_seconds: int | None, said: str
) -> None:
    with pytest.raises(ValueError, match=said):
        _resolved(tmp_path, *extra, window_seconds=window_seconds)


def test_audit_sink_offers_every_registered_backend() -> None:
    (flag,) = [f for f in SinkOptions.FLAGS if f.name == "audit_sink"]
    assert flag.choices == tuple(AUDIT_SINKS)
