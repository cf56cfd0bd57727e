"""A sink failing in a batch run's commit phase, through the fault proxy on the emulators.

The proxy turns to the fault on the first request that only the phase makes
(`FaultProxy.set_on`), so the fault starts with the phase whatever the load. The run ends
within the bound with one line, exit 1; what it leaves is what docs/outputs.md's table says;
a rerun with `--overwrite` once the sink answers commits one audit row per request.
"""

import io
import time

import pyarrow.parquet as pq
import pytest

from tests.batch_run import SAMPLES, flags
from tests.fault_proxy import fault_proxy
from tests.fault_runs import WITHIN, failed_within, gs_argv, port, prompts_out, start, until
from transforms.io.bigquery import bigquery_client

pytestmark = pytest.mark.emulators


def _committed(project: str, dataset: str) -> list[tuple[str, str]]:
    """(request id, run id) of each manifest row the views of `dataset` show."""
    client = bigquery_client(project)
    sql = f"SELECT request_id, run_id FROM `{dataset}.manifests` ORDER BY request_id"
    return [(r["request_id"], r["run_id"]) for r in client.query(sql).result()]


@pytest.mark.parametrize("fault", ["hang", "503"])
def test_bigquery_failing_in_its_table_commit_leaves_the_tables_as_they_were(
    gcp_emulators, tmp_path, fault
) -> None:
    project = gcp_emulators.project
    dataset = f"{project}.faults_commit_{fault.replace('503', 'unavailable')}"
    out = tmp_path / "run"
    argv = flags(SAMPLES / "requests.jsonl", out, f"--bigquery_dataset={dataset}")
    earlier = start(argv, {})
    _, err = earlier.communicate(timeout=WITHIN * 2)
    assert earlier.returncode == 0, err[-3000:]
    before = _committed(project, dataset)
    with fault_proxy(port(gcp_emulators.bigquery_host)) as proxy:
        env = {"BIGQUERY_EMULATOR_HOST": f"http://{proxy.host}"}
        job = start([*argv, "--overwrite"], env)
        until(lambda: any(out.glob(".tmp-*/runs")), job)
        proxy.set_on(b"/jobs", fault)  # the commit's transaction is the run's first query
        until(lambda: proxy.tripped, job)
        line = failed_within(job, time.monotonic())
        assert f"--bigquery_dataset {dataset}" in line, line
        assert "table commit phase" in line or "BigQuery commit failed" in line, line
        proxy.set("pass")  # the run has exited: read through a working link
        assert _committed(project, dataset) == before  # the tables as they were

        rerun = start([*argv, "--overwrite"], env)
        stdout, err = rerun.communicate(timeout=WITHIN * 2)
        assert rerun.returncode == 0, err[-3000:]
    after = _committed(project, dataset)
    assert len({request_id for request_id, _ in after}) == len(after) == prompts_out(stdout)
    assert {run for _, run in after}.isdisjoint(run for _, run in before)


@pytest.mark.parametrize("fault", ["kill", "hang"])
def test_cloud_storage_failing_in_the_commit_commits_nothing(gcs, fault) -> None:
    """Cloud Storage breaks as the commit writes the run's counts into its record (the
    first write only the commit makes: an object named `.run.json` under the staging
    folder; the lock phase only reads the committed one, by its encoded path)."""
    proxy, client = gcs
    output = f"gs://faults/runs/commit-{fault}"
    prefix = f"runs/commit-{fault}/"
    env = {"STORAGE_EMULATOR_HOST": f"http://{proxy.host}"}
    proxy.set_on(b"/.run.json", fault)
    job = start(gs_argv(output), env)
    until(lambda: proxy.tripped, job)
    line = failed_within(job, time.monotonic())
    assert f"--output {output}" in line and "in the commit phase" in line, line
    assert f"{output}/.tmp-" in line, line
    proxy.set("pass")  # the run has exited: read what it left through a working link
    names = lambda: [b.name for b in client.list_blobs("faults", prefix=prefix)]  # noqa: E731
    committed = [n for n in names() if "/.tmp-" not in n and "/.lock-" not in n]
    assert committed == [], committed  # stopped before its first move: nothing committed

    rerun = start(gs_argv(output), env)
    stdout, err = rerun.communicate(timeout=WITHIN * 2)
    assert rerun.returncode == 0, err[-3000:]
    bucket = client.bucket("faults")
    ids = [
        request_id
        for n in names()
        if n.startswith(f"{prefix}manifests/")
        for request_id in pq.read_table(io.BytesIO(bucket.blob(n).download_as_bytes()))
        .column("request_id")
        .to_pylist()
    ]
    assert len(set(ids)) == len(ids) == prompts_out(stdout) > 0
