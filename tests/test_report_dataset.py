"""The report over a BigQuery dataset, on the emulator: the newest runs by run id, each
with its own page and a headline row, verifications one answer set at a time."""

import html
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipelines import report
from pipelines.batch import run
from pipelines.command import CommandFailed, UsageError
from pipelines.verification import verify
from tests.audit_rows import VERIFICATIONS
from tests.batch_run import SAMPLES, flags
from tests.test_report_browser import ANSWERS, render
from transforms.io.bigquery import bigquery_client, to_bigquery_row

pytestmark = pytest.mark.emulators

DATASET = "report_runs"


@pytest.fixture(scope="module")
def dataset(gcp_emulators, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Two batch runs committed into one dataset (two jobs, a second apart), the newer one
    verified twice (answer sets `older` and `newer`, rows inserted as verify inserts them)."""
    project = gcp_emulators.project
    name = f"{project}.{DATASET}"
    root = tmp_path_factory.mktemp("bq-runs")
    for job in ("first", "second"):
        run(
            flags(
                SAMPLES / "requests.jsonl",
                root / job,
                f"--bigquery_dataset={name}",
                "--event_time=2026-07-01T00:00:00Z",
            )
        )
        time.sleep(1.1)  # run ids sort by their start, to the second
    client = bigquery_client(project)
    (newest,) = client.query(f"SELECT MAX(run_id) AS r FROM `{name}.runs`").result()
    base = datetime(2026, 7, 2, tzinfo=UTC)
    rows = [
        to_bigquery_row(
            row.model_copy(
                update={
                    "run_id": newest["r"],
                    "answer_set": answer_set,
                    "verified_at": base + timedelta(hours=hour),
                    "passed": row.passed if answer_set == "newer" else False,
                }
            )
        )
        for hour, answer_set in enumerate(("older", "newer"))
        for row in VERIFICATIONS
    ]
    assert client.insert_rows_json(f"{name}.verifications", rows) == []
    client.close()
    return name


def _rows(page: str) -> list[list[str]]:
    """The rows of the overview's table of runs (the first table)."""
    runs = page.split("<h2>", 1)[0]
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", runs)]


def _count(name: str, sql: str) -> list[tuple]:
    client = bigquery_client(name.split(".")[0])
    try:
        return [tuple(r.values()) for r in client.query(sql.format(d=name)).result()]
    finally:
        client.close()


def test_each_run_of_the_dataset_gets_a_page_and_a_headline_row_newest_first(
    dataset: str, tmp_path: Path
) -> None:
    page = report.write_dataset_report(dataset, tmp_path / "report")
    text = page.read_text(encoding="utf-8")
    counts = dict(_count(dataset, "SELECT run_id, COUNT(*) FROM `{d}.manifests` GROUP BY run_id"))
    rows = [r for r in _rows(text) if r]
    assert [r[0] for r in rows] == sorted(counts, reverse=True)
    jobs = dict(_count(dataset, "SELECT run_id, job FROM `{d}.runs`"))
    assert [r[8] for r in rows] == [html.escape(jobs[r[0]]) for r in rows]  # the job, named
    assert [r[7] for r in rows] == ["newer", "(none)"]
    assert [int(r[3]) for r in rows] == [counts[r[0]] for r in rows]
    checked = [v for v in VERIFICATIONS if v.passed is not None]  # the newer set's verdicts
    rate = sum(bool(v.passed) for v in checked) / len(checked)
    assert float(rows[0][6]) == pytest.approx(rate, abs=5e-4)
    assert rows[1][6] == "(none)"
    for run_id in counts:
        own = (tmp_path / "report" / run_id / "index.html").read_text(encoding="utf-8")
        assert html.escape(f"{dataset}, run {run_id}") in own
    newest = (tmp_path / "report" / rows[0][0] / "index.html").read_text(encoding="utf-8")
    assert "in answer set <code>newer</code> (others: older" in newest
    assert f"<th>answers verified</th><td class=n>{len(VERIFICATIONS)}</td>" in newest


def test_the_answer_set_is_chosen_and_a_missing_one_refused(dataset: str, tmp_path: Path) -> None:
    page = report.write_dataset_report(dataset, tmp_path / "older", answer_set="older")
    rows = [r for r in _rows(page.read_text(encoding="utf-8")) if r]
    assert float(rows[0][6]) == 0.0  # every answer of the older set failed
    with pytest.raises(UsageError, match=r"'missing' is not among the answer sets.*newer, older"):
        report.write_dataset_report(dataset, tmp_path / "x", answer_set="missing")


def test_last_runs_reads_only_the_newest(dataset: str, tmp_path: Path) -> None:
    page = report.write_dataset_report(dataset, tmp_path / "one", last_runs=1)
    rows = [r for r in _rows(page.read_text(encoding="utf-8")) if r]
    ((newest,),) = _count(dataset, "SELECT MAX(run_id) FROM `{d}.runs`")
    assert [r[0] for r in rows] == [newest]
    assert sorted(p.name for p in (tmp_path / "one").iterdir() if p.is_dir()) == [newest]


def test_a_dataset_without_runs_or_that_does_not_exist_is_one_line(
    gcp_emulators, tmp_path: Path
) -> None:
    project = gcp_emulators.project
    with pytest.raises(CommandFailed, match="does not exist"):
        report.write_dataset_report(f"{project}.no_such_dataset", tmp_path / "a")
    client = bigquery_client(project)
    client.create_dataset(f"{project}.empty_runs")
    client.close()
    with pytest.raises(UsageError, match="holds no run"):
        report.write_dataset_report(f"{project}.empty_runs", tmp_path / "b")
    assert report.main(["--bigquery_dataset", f"{project}.empty_runs"]) == 2
    assert report.main(["--bigquery_dataset", "no-dot"]) == 2


def test_the_command_takes_one_source(capsys: pytest.CaptureFixture[str]) -> None:
    assert report.main(["--audit", "out", "--bigquery_dataset", "p.d"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err
    assert report.main(["--out", "r"]) == 2
    capsys.readouterr()
    assert report.main(["--bigquery_dataset", "p.d", "--last_runs", "0"]) == 2
    said = capsys.readouterr().err
    assert "--last_runs must be positive, got 0; pass e.g. --last_runs=20" in said


def test_the_dataset_overview_renders_without_errors(dataset: str, tmp_path: Path) -> None:
    page = report.write_dataset_report(dataset, tmp_path / "report")
    dom, console = render(page, tmp_path / "profile")
    assert console == [] and 'data-images="ok"' in dom


def test_a_dataset_out_of_reach_is_one_line_in_bounded_time(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("BIGQUERY_EMULATOR_HOST", "http://127.0.0.1:9")  # nothing listens
    started = time.monotonic()
    with pytest.raises(CommandFailed, match=r"could not be reached within --timeout_seconds=2"):
        report.write_dataset_report("p.d", tmp_path / "r", timeout_seconds=2)
    assert time.monotonic() - started < 30


def test_a_run_whose_rows_went_to_bigquery_is_verified_there_and_reported_with_them(
    gcp_emulators, tmp_path: Path
) -> None:
    """`evpack verify` of a batch run with `--bigquery_dataset` (no manifests in its folder)
    reads its manifests from the dataset by the run's id, and its verifications show on the
    run's page of the dataset report."""
    name = f"{gcp_emulators.project}.verified_runs"
    folder = tmp_path / "run"
    args = ("--prompt_format=anthropic_batch", f"--bigquery_dataset={name}")
    run(flags(SAMPLES / "requests.jsonl", folder, *args))
    assert not list(folder.glob("manifests/*"))
    verify_args = [f"--answers={ANSWERS}", f"--run={folder}", "--runner=FnApiRunner"]
    with pytest.raises(ValueError, match="add --bigquery_dataset"):
        verify.run(verify_args)
    verify.run([*verify_args, f"--bigquery_dataset={name}"])
    ((run_id,),) = _count(name, "SELECT run_id FROM `{d}.runs`")
    rows = _count(name, "SELECT run_id, answer_set, passed FROM `{d}.verifications`")
    assert len(rows) == len(pq.read_table(folder / "verifications" / ANSWERS.stem).to_pylist())
    assert {r[1] for r in rows} == {ANSWERS.stem}
    assert {r[0] for r in rows} <= {run_id, None}  # null: an answer to no request of the run
    checked = [r[2] for r in rows if r[0] == run_id and r[2] is not None]
    assert checked
    page = report.write_dataset_report(name, tmp_path / "report")
    (row,) = [r for r in _rows(page.read_text(encoding="utf-8")) if r]
    assert row[0] == run_id
    assert float(row[6]) == pytest.approx(sum(checked) / len(checked), abs=5e-4)


def test_a_row_no_job_wrote_stops_the_report_naming_its_table(
    gcp_emulators, tmp_path: Path
) -> None:
    name = f"{gcp_emulators.project}.bad_rows"
    run(flags(SAMPLES / "requests.jsonl", tmp_path / "run", f"--bigquery_dataset={name}"))
    ((run_id,),) = _count(name, "SELECT run_id FROM `{d}.runs`")
    row = {
        "received_at": "2026-07-01T00:00:00Z",
        "stage": "no such stage",  # the model's stages do not include it
        "error": "e",
        "payload": "{}",
        "source": "s",
        "builder_version": "b",
        "run_id": run_id,
    }
    client = bigquery_client(gcp_emulators.project)
    assert client.insert_rows_json(f"{name}.dead_letters", [row]) == []
    client.close()
    with pytest.raises(CommandFailed, match=rf"{name}\.dead_letters holds a row no job wrote"):
        report.write_dataset_report(name, tmp_path / "report")
