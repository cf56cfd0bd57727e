"""A batch job's audit rows in BigQuery exactly once per run: a rerun is refused, an
overwrite replaces the earlier run's rows, a failed or killed run leaves none visible.

The decisions are plain functions (`rerun_refusal`, `commit_script`); the rest runs the
real batch job on the BigQuery emulator. The killed run is a real process, stopped with
SIGKILL at the point a run has finished its pipeline and is about to commit (the test
holds it there by replacing the file commit with a wait, then kills it).
"""

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from google.cloud import bigquery
from hypothesis import given
from hypothesis import strategies as st

from pipelines.batch import main
from pipelines.command import UsageError
from pipelines.options.sinks import job_name, run_key
from pipelines.views import create_views
from tests.batch_run import ROOT, SAMPLES, flags, input_lines
from tests.conftest import EMULATOR_PROJECT
from transforms.io.bigquery import bigquery_client
from transforms.io.table_commit import (
    RUN_TABLES,
    TableRun,
    commit_script,
    rerun_refusal,
    staging_prefix,
)

RUN = TableRun("p.audit", "nightly", "2026-12-01", "20261203T102000-1a2b3c4d")
AUDIT_TABLES = [name for name in RUN_TABLES if name != "runs"]


def test_a_rerun_is_refused_unless_told_to_overwrite_naming_what_is_there() -> None:
    assert rerun_refusal(RUN, [], overwrite=False) is None
    assert rerun_refusal(RUN, ["20261202T000000-00000000"], overwrite=True) is None
    refusal = rerun_refusal(RUN, ["20261202T000000-00000000"], overwrite=False)
    assert refusal is not None and "\n" not in refusal
    for named in (
        "p.audit",
        "20261202T000000-00000000",
        "'nightly'",
        "'2026-12-01'",
        "--overwrite",
    ):
        assert named in refusal, named


@pytest.mark.parametrize("flag, read", [("audit_job", job_name), ("run_key", run_key)])
def test_job_and_key_are_the_output_unless_named_and_a_blank_name_is_refused(
    flag: str, read: Callable[[PipelineOptions, str], str], tmp_path: Path
) -> None:
    output = str(tmp_path / "out" / "2026-12-01")
    assert read(PipelineOptions([]), "out/2026-12-01") == os.path.abspath("out/2026-12-01")
    assert read(PipelineOptions([]), "gs://b/out") == "gs://b/out"
    assert read(PipelineOptions([f"--{flag}=night 1"]), output) == "night 1"
    for blank in ("", " ", " nightly", "nightly "):
        with pytest.raises(UsageError, match=f"--{flag} ") as refused:
            read(PipelineOptions([f"--{flag}={blank}"]), output)
        assert len(str(refused.value).splitlines()) == 1


def test_the_commit_is_one_transaction_replacing_the_jobs_runs_in_every_table() -> None:
    script = commit_script(RUN, ["20261202T000000-00000000"])
    statements = [s.strip() for s in script.split(";\n")]
    assert statements[0] == "BEGIN TRANSACTION" and statements[-1] == "COMMIT TRANSACTION;"
    assert "ERROR(" in statements[1] and "'20261202T000000-00000000'" in statements[1]
    deletes = [s for s in statements if s.startswith("DELETE")]
    inserts = [s for s in statements if s.startswith("INSERT")]
    assert [s.split("`")[1] for s in deletes] == [RUN.final(n) for n in RUN_TABLES]
    assert [s.split("`")[1] for s in inserts] == [RUN.final(n) for n in RUN_TABLES]
    assert all(RUN.staged(n) in s for n, s in zip(RUN_TABLES, inserts, strict=True))
    assert all(s.index("DELETE") < script.index("INSERT") for s in deletes)
    for named in (RUN.job, RUN.key):
        assert named not in script, "the job and key are joined from the staged record"


def test_no_run_id_but_a_made_one_reaches_the_sql() -> None:
    assert staging_prefix(RUN.run_id) == "staging_20261203T102000_1a2b3c4d_"
    for hostile in ("x'; DROP TABLE t; --", "a b", "", "r`id"):
        with pytest.raises(ValueError, match="not a run id"):
            staging_prefix(hostile)
        with pytest.raises(ValueError, match="not a run id"):
            commit_script(RUN, [hostile])


HOSTILE = st.text(
    st.sampled_from(list("'`\";\n\r\t$%{}\\-_ -- /*")) | st.characters(codec="utf-8"),
    max_size=40,
)
"""Quotes, backticks, comments, `$`, `%`, braces, control characters and any unicode."""


@given(job=HOSTILE, key=HOSTILE, other=HOSTILE)
def test_no_job_name_or_key_reaches_the_sql_and_its_refusal_is_one_line(
    job: str, key: str, other: str
) -> None:
    earlier = ["20261202T000000-00000000"]
    hostile = TableRun(RUN.dataset, job, key, RUN.run_id)
    assert commit_script(hostile, earlier) == commit_script(
        TableRun(RUN.dataset, other, other, RUN.run_id), earlier
    )
    refusal = rerun_refusal(hostile, earlier, overwrite=False)
    assert refusal is not None and len(refusal.splitlines()) == 1


@given(run_id=HOSTILE)
def test_a_staging_table_name_is_an_identifier_or_refused(run_id: str) -> None:
    try:
        prefix = staging_prefix(run_id)
    except ValueError:
        return
    assert re.fullmatch(r"staging_[A-Za-z0-9_]+_", prefix)


def _client() -> bigquery.Client:
    return bigquery_client(EMULATOR_PROJECT)


def _rows(dataset: str) -> dict[str, list[str | None]]:
    """The run id of every row of each audit table, and the run ids of `runs`."""
    client = _client()
    return {
        name: sorted(
            r["run_id"] for r in client.query(f"SELECT run_id FROM `{dataset}.{name}`").result()
        )
        for name in RUN_TABLES
    }


def _views(dataset: str) -> dict[str, int]:
    """What the dashboards count: requests (manifests) and exclusions."""
    client = _client()
    create_views(client, dataset)
    counted = {}
    for view, column in (("conflicts_daily", "requests"), ("exclusions_daily", "exclusions")):
        sql = f"SELECT SUM({column}) AS n FROM `{dataset}.{view}`"
        counted[view] = next(iter(client.query(sql).result()))["n"] or 0
    return counted


def _staging_tables(dataset: str) -> list[str]:
    return [t.table_id for t in _client().list_tables(dataset) if t.table_id.startswith("staging_")]


def _batch(tmp_path: Path, dataset: str, lines: list[str], out: str, *extra: str) -> int:
    path = tmp_path / f"in-{time.monotonic_ns()}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return main(flags(path, tmp_path / out, f"--bigquery_dataset={dataset}", *extra))


REQUESTS = input_lines(SAMPLES / "requests.jsonl")


@pytest.mark.emulators
def test_a_rerun_into_the_same_dataset_is_refused_and_adds_nothing(
    gcp_emulators: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = f"{EMULATOR_PROJECT}.rerun_refused"
    assert _batch(tmp_path, dataset, REQUESTS, "out") == 0
    first = _rows(dataset)
    (run_id,) = first["runs"]
    assert first["manifests"] and set(first["manifests"]) == {run_id}
    assert f"bigquery         {dataset}: run {run_id} of job" in capsys.readouterr().out
    assert all(set(first[name]) == {run_id} for name in AUDIT_TABLES if first[name])
    capsys.readouterr()
    # Job and key are its --output: the same output, its files gone, is still the same run ...
    for path in sorted((tmp_path / "out").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    assert _batch(tmp_path, dataset, REQUESTS, "out") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"already holds the rows of run {run_id}" in err[0]
    assert "--overwrite" in err[0] and dataset in err[0]
    # ... and so is another output named as the same job and key.
    same = (f"--audit_job={tmp_path / 'out'}", f"--run_key={tmp_path / 'out'}")
    assert _batch(tmp_path, dataset, REQUESTS, "other", *same) == 2
    assert _rows(dataset) == first
    assert _staging_tables(dataset) == []
    # Another job packs into the same tables beside it, whatever its name and key hold.
    hostile = "x'; DELETE FROM `t` WHERE TRUE; -- $5 {a} %s \u2028é"
    named = (f"--audit_job={hostile}", f"--run_key={hostile}")
    assert _batch(tmp_path, dataset, REQUESTS[:3], "other", *named) == 0
    assert len(set(_rows(dataset)["runs"])) == 2
    capsys.readouterr()
    assert _batch(tmp_path, dataset, REQUESTS[:3], "third", *named) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert len(set(_rows(dataset)["runs"])) == 2


@pytest.mark.emulators
def test_an_overwrite_replaces_the_earlier_runs_rows_and_the_views_count_each_request_once(
    gcp_emulators: object, tmp_path: Path
) -> None:
    dataset = f"{EMULATOR_PROJECT}.rerun_overwrite"
    assert _batch(tmp_path, dataset, REQUESTS, "out") == 0
    once = _views(dataset)
    assert _batch(tmp_path, dataset, REQUESTS, "out", "--overwrite") == 0
    rows = _rows(dataset)
    (run_id,) = rows["runs"]
    assert all(set(rows[name]) <= {run_id} for name in AUDIT_TABLES)
    assert _views(dataset) == once
    client = _client()
    ids = [r["request_id"] for r in client.query(f"SELECT request_id FROM `{dataset}.manifests`")]
    assert len(ids) == len(set(ids)) == once["conflicts_daily"]
    exclusions = client.query(f"SELECT COUNT(*) AS n FROM `{dataset}.exclusions`").result()
    assert next(iter(exclusions))["n"] == once["exclusions_daily"]
    assert _staging_tables(dataset) == []


def _nights(dataset: str) -> dict[str, tuple[str, list[str]]]:
    """Each committed run's key, with its run id and the request ids of its manifests."""
    client = _client()
    runs = client.query(f"SELECT run_id, run_key FROM `{dataset}.runs`").result()
    manifests = list(client.query(f"SELECT run_id, request_id FROM `{dataset}.manifests`"))
    return {
        r["run_key"]: (
            r["run_id"],
            sorted(m["request_id"] for m in manifests if m["run_id"] == r["run_id"]),
        )
        for r in runs
    }


@pytest.mark.emulators
def test_a_nightly_job_keeps_every_night_and_an_overwrite_replaces_its_own_night_only(
    gcp_emulators: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = f"{EMULATOR_PROJECT}.nightly"
    nightly = "--audit_job=nightly"
    assert _batch(tmp_path, dataset, REQUESTS, "out/2026-12-01", nightly) == 0
    assert _batch(tmp_path, dataset, REQUESTS, "out/2026-12-02", nightly) == 0
    nights = _nights(dataset)
    one, two = (str(tmp_path / "out" / day) for day in ("2026-12-01", "2026-12-02"))
    assert sorted(nights) == [one, two]
    requests = nights[one][1]
    assert requests and len(set(requests)) == len(requests)  # each request once per night
    assert nights[two][1] == requests and nights[one][0] != nights[two][0]
    capsys.readouterr()
    # Night 2 again: refused without --overwrite, and with it replaces night 2 alone.
    assert _batch(tmp_path, dataset, REQUESTS, "out/2026-12-02", nightly) == 2
    assert "--overwrite" in capsys.readouterr().err and _nights(dataset) == nights
    assert _batch(tmp_path, dataset, REQUESTS[:4], "out/2026-12-02", nightly, "--overwrite") == 0
    after = _nights(dataset)
    assert after[one] == nights[one]
    assert after[two][0] != nights[two][0] and len(after[two][1]) < len(requests)
    assert set(_rows(dataset)["manifests"]) == {after[one][0], after[two][0]}
    # A job writing to one --output each night names the night as its key.
    daily = ("--audit_job=daily", "--overwrite")
    for day in ("2026-12-01", "2026-12-02"):
        assert _batch(tmp_path, dataset, REQUESTS, "daily", *daily, f"--run_key={day}") == 0
    assert {"2026-12-01", "2026-12-02"} <= set(_nights(dataset))
    assert len(_nights(dataset)) == 4
    assert _staging_tables(dataset) == []


@pytest.mark.emulators
def test_a_failed_overwrite_leaves_no_row_of_it_and_the_earlier_run_whole(
    gcp_emulators: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = f"{EMULATOR_PROJECT}.rerun_failed"
    assert _batch(tmp_path, dataset, REQUESTS, "out") == 0
    before, counted = _rows(dataset), _views(dataset)
    capsys.readouterr()
    assert _batch(tmp_path, dataset, ["not json"] * 5, "out", "--overwrite") == 1
    err = capsys.readouterr().err
    assert "no prompt was made" in err and f"so are the tables of {dataset}" in err
    assert _rows(dataset) == before
    assert _views(dataset) == counted
    assert _staging_tables(dataset) == []


KILLED_BEFORE_COMMIT = """
import sys, time
from pathlib import Path
import transforms.staging

def held(*args, **kwargs):
    Path(sys.argv[1]).write_text("finished, about to commit")
    time.sleep(600)

transforms.staging.commit = held  # before the job's modules import it
import pipelines.batch
sys.exit(pipelines.batch.main(sys.argv[2:]))
"""


@pytest.mark.emulators
def test_a_run_killed_before_its_commit_leaves_no_row_visible(
    gcp_emulators: object, tmp_path: Path
) -> None:
    dataset = f"{EMULATOR_PROJECT}.killed_run"
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(REQUESTS) + "\n", encoding="utf-8")
    argv = flags(path, tmp_path / "out", f"--bigquery_dataset={dataset}")
    signal_file = tmp_path / "finished"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    job = subprocess.Popen(
        [sys.executable, "-c", KILLED_BEFORE_COMMIT, str(signal_file), *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while not signal_file.exists():
            assert job.poll() is None, "the run ended before its commit"
            assert time.monotonic() < deadline, "the run never finished its pipeline"
            time.sleep(0.2)
        os.kill(job.pid, signal.SIGKILL)
    finally:
        job.wait(timeout=60)
    assert all(rows == [] for rows in _rows(dataset).values())
    assert _views(dataset) == {"conflicts_daily": 0, "exclusions_daily": 0}
    # The next run takes the dead run's lock over and commits once.
    assert main(argv) == 0
    rows = _rows(dataset)
    (run_id,) = rows["runs"]
    assert rows["manifests"] and set(rows["manifests"]) == {run_id}
