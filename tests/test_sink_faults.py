"""Every sink of a batch run broken in each phase, through a loopback fault proxy of our own
(`tests.fault_proxy`), on the real emulators: the run ends within the bound
(`--sink_timeout_seconds`, a few seconds here) with one line naming the sink, the phase
and the staging folder, exit 1, nothing committed; a rerun once the sink is back
completes with one prompt and one audit row per request.

Each run is a process of its own (`python -m pipelines.batch`), as a user runs it: the
bound must end the process, whatever threads the runner left waiting on the sink.
"""

import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.batch_run import SAMPLES, flags
from tests.fault_proxy import fault_proxy
from tests.fault_runs import (
    BOUND,
    ROOT,
    WITHIN,
    failed_within,
    gs_argv,
    port,
    prompts_out,
    start,
    until,
)
from tests.stream_harness import Routes, drain
from transforms.io.bigquery import bigquery_client

pytestmark = pytest.mark.emulators


@pytest.mark.parametrize("fault", ["kill", "503", "refuse"])
def test_cloud_storage_down_while_staging_ends_in_bounded_time(gcs, fault) -> None:
    proxy, client = gcs
    output = f"gs://faults/runs/{fault}"
    env = {"STORAGE_EMULATOR_HOST": f"http://{proxy.host}"}
    # down from the first staged file on (the first request naming an object under the
    # staging folder; the lock's body names the folder too, without the leading slash),
    # whatever the load: set once a staged file was seen, the fault could meet the commit
    proxy.set_on(b"/.tmp-", fault)
    job = start(gs_argv(output), env)
    names = lambda: [b.name for b in client.list_blobs("faults", prefix=f"runs/{fault}/")]  # noqa: E731
    until(lambda: proxy.tripped, job)
    line = failed_within(job, time.monotonic())
    assert f"--output {output} did not answer" in line, line
    assert "in the staging phase" in line and f"{output}/.tmp-" in line, line
    proxy.set("pass")  # the run has exited: read what it left through a working link
    assert not any(
        n.endswith(".run.json") or "/manifests/" in n for n in names() if "/.tmp-" not in n
    )

    rerun = start(gs_argv(output), env)
    stdout, err = rerun.communicate(timeout=WITHIN * 2)
    assert rerun.returncode == 0, err[-3000:]
    manifests = [n for n in names() if n.startswith(f"runs/{fault}/manifests/")]
    ids = [
        request_id
        for n in manifests
        for request_id in pq.read_table(
            io.BytesIO(client.bucket("faults").blob(n).download_as_bytes())
        )
        .column("request_id")
        .to_pylist()
    ]
    assert len(set(ids)) == len(ids) == prompts_out(stdout) > 0


def test_of_two_runs_racing_for_one_cloud_storage_output_exactly_one_starts(gcs) -> None:
    """The emulator ignores `ifGenerationMatch`, so the proxy answers the second
    create-if-absent of the lock 412 as Cloud Storage would (a shim, named as such in
    `tests.fault_proxy`); what is tested is the runs' handling of it: one wins, the other
    is refused naming the lock, neither livelocks."""
    proxy, client = gcs
    proxy.enforce_create_if_absent()
    output = "gs://faults/runs/race"
    env = {"STORAGE_EMULATOR_HOST": f"http://{proxy.host}"}
    jobs = [start(gs_argv(output), env), start(gs_argv(output), env)]
    ended = [
        (job.returncode, err) for job in jobs for _, err in [job.communicate(timeout=WITHIN * 3)]
    ]
    codes = sorted(code for code, _ in ended)
    assert codes == [0, 2], [err[-2000:] for _, err in ended]
    refused = next(err for code, err in ended if code == 2)
    assert f"{output}/.lock-output" in refused and "Traceback" not in refused, refused[-2000:]
    names = [b.name for b in client.list_blobs("faults", prefix="runs/race/")]
    assert sum(n.endswith("/.run.json") for n in names) == 1


@pytest.mark.parametrize("fault", ["kill", "hang"])
def test_bigquery_down_mid_insert_ends_in_bounded_time(gcp_emulators, tmp_path, fault) -> None:
    dataset = f"{gcp_emulators.project}.faults_staging_{fault}"
    out = tmp_path / "run"
    argv = flags(SAMPLES / "requests.jsonl", out, f"--bigquery_dataset={dataset}")
    with fault_proxy(port(gcp_emulators.bigquery_host)) as proxy:
        env = {"BIGQUERY_EMULATOR_HOST": f"http://{proxy.host}"}
        # down from the first staged row on, whatever the load: set once the output folder
        # was seen, the fault could meet the table commit after a fast pipeline
        proxy.set_on(b"/insertAll", fault)
        job = start(argv, env)
        until(lambda: proxy.tripped, job)
        line = failed_within(job, time.monotonic())
        assert f"--bigquery_dataset {dataset}" in line and "in the staging phase" in line, line
        assert f"{out}/.tmp-" in line, line
        assert not (out / ".run.json").exists()

        proxy.set("pass")
        rerun = start(argv, env)
        stdout, err = rerun.communicate(timeout=WITHIN * 2)
        assert rerun.returncode == 0, err[-3000:]
    made = prompts_out(stdout)
    client = bigquery_client(gcp_emulators.project)
    rows = list(client.query(f"SELECT request_id FROM `{dataset}.manifests`").result())
    assert len({r["request_id"] for r in rows}) == len(rows) == made > 0


def test_a_vanished_output_folder_is_one_line(tmp_path) -> None:
    out = tmp_path / "run"
    job = start(flags(SAMPLES / "requests.jsonl", out), {})
    until(lambda: any(out.glob(".tmp-*/runs")), job)
    out.rename(tmp_path / "moved")  # gone from its path at once, as an unmounted folder
    line = failed_within(job, time.monotonic())
    assert f"--output {out} no longer holds this run's lock" in line, line
    assert not (out / ".run.json").exists() and not (tmp_path / "moved" / ".run.json").exists()


def test_a_step_that_sees_the_folder_gone_before_the_probe_names_the_lost_lock(
    tmp_path, monkeypatch
) -> None:
    """The order the test above leaves to chance: a write's finalize finds its files gone
    (Beam's `BeamIOError`, no errno) before the lock probe asks."""
    from apache_beam.io.filesystem import BeamIOError

    from pipelines import batch
    from pipelines.run_commit import RunFailed

    out = tmp_path / "run"

    def vanished(*_args: object) -> None:
        out.rename(tmp_path / "moved")
        raise BeamIOError("src and dst files do not exist. src: a, dst: b")

    monkeypatch.setattr(batch, "_finished", vanished)
    with pytest.raises(RunFailed, match="no longer holds this run's lock"):
        batch.run(flags(SAMPLES / "requests.jsonl", out))


def _dirs_mode(folder: Path, mode: int) -> None:
    for path in [folder, *folder.rglob("*")]:
        if path.is_dir():
            path.chmod(mode)


@contextmanager
def _read_only_switch(folder: Path) -> Iterator[Callable[[], None]]:
    """A folder on a filesystem of its own that a call turns read-only mid-run: a tmpfs
    remounted read-only as root (permissions do not stop root), the write bits taken away
    otherwise."""
    folder.mkdir()
    if os.geteuid() != 0:
        yield lambda: _dirs_mode(folder, 0o555)
        _dirs_mode(folder, 0o755)
        return
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(folder)])
    if mounted.returncode != 0:
        pytest.skip("root without the right to mount: no way to make a folder read-only")
    try:
        yield lambda: subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_an_output_folder_turning_read_only_mid_run_is_one_line(tmp_path) -> None:
    out = tmp_path / "disk" / "run"
    with _read_only_switch(tmp_path / "disk") as read_only:
        first = subprocess.run(
            [sys.executable, "-m", "pipelines.batch", *flags(SAMPLES / "requests.jsonl", out)],
            cwd=ROOT,
            capture_output=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert first.returncode == 0, first.stderr[-3000:]
        earlier = (out / ".run.json").read_bytes()
        job = start(flags(SAMPLES / "requests.jsonl", out, "--overwrite"), {})
        until(lambda: any(out.glob(".tmp-*/runs")), job)
        read_only()
        try:
            _, err = job.communicate(timeout=WITHIN)
        finally:
            if job.poll() is None:
                job.kill()
        assert job.returncode == 1, err[-3000:]
        assert "Traceback" not in err, err[-3000:]
        lines = [line for line in err.splitlines() if line.startswith("evpack batch:")]
        assert len(lines) == 1 and lines[0] == err.strip().splitlines()[-1], err[-3000:]
        assert f"{out}/" in lines[0] and "refused the write" in lines[0], lines[0]
        assert "nothing was committed" in lines[0], lines[0]
        assert (out / ".run.json").read_bytes() == earlier  # the earlier run untouched


@pytest.mark.parametrize("cut", ["bound", "kill"])
def test_a_delivery_cut_off_resends_only_the_unrecorded_with_their_dedup_ids(
    gcp_emulators, tmp_path, cut
) -> None:
    """The topic hangs once the run is committed: the delivery ends within the bound
    (exit 1, one line), or the process is killed while it waits (SIGKILL); either way
    the batch's intents are recorded without outcomes, and the rerun sends exactly those
    again, each with its first `dedup_id`."""
    routes = Routes(gcp_emulators.project, f"cut-off-delivery-{cut}")
    routes.create()
    topic = routes.topic("prompts")
    out = tmp_path / "run"
    argv = flags(SAMPLES / "requests.jsonl", out, f"--prompts_topic={topic}")
    with fault_proxy(port(f"http://{gcp_emulators.pubsub_host}")) as proxy:
        env = {"PUBSUB_EMULATOR_HOST": proxy.host}
        job = start(argv, env, BOUND if cut == "bound" else 600)
        until(lambda: any(out.glob(".tmp-*/outbox/*")), job)  # staged: publishes nothing
        proxy.set("hang")  # so delivery, after the commit, finds the topic hung
        if cut == "bound":
            line = failed_within(job, time.monotonic())
            assert f"not delivered to --prompts_topic {topic}" in line, line
        else:
            until(lambda: any(out.glob("deliveries/intents-*")), job)
            job.kill()
            job.communicate()
        assert (out / ".run.json").exists()
        intents = _rows(out / "deliveries", "intents-*.jsonl")
        assert intents and not _rows(out / "deliveries", "deliveries-*.jsonl")

        proxy.set("pass")
        rerun = start([*argv, "--overwrite"], env)
        stdout, err = rerun.communicate(timeout=WITHIN * 2)
        assert rerun.returncode == 0, err[-3000:]
    assert f"sent again       {len(intents)}" in stdout, stdout
    got = drain(routes.subscription("prompts"), len(intents))
    first = {i["request_id"]: i["dedup_id"] for i in intents}
    assert {m.attributes["request_id"]: m.attributes["dedup_id"] for m in got} == first
    assert len(got) == len(first)  # a hung request never reached the topic: sent once


def _rows(folder: Path, pattern: str) -> list[dict]:
    return [json.loads(line) for p in folder.glob(pattern) for line in p.read_text().splitlines()]
