"""The local report: the dashboard views run by DuckDB over audit Parquet, drawn as a page."""

import csv
import html
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines import batch
from pipelines.report import PANELS, write_report
from pipelines.report import main as report_main
from pipelines.report.audit import open_audit, run_views, totals
from pipelines.report.downloads import FORMULA_STARTS, write_csv
from pipelines.report.plots import PLOTS
from pipelines.views import load_views
from tests.audit_rows import EXPECTED, ROWS, assert_view_rows, write_audit

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SAMPLES = Path(__file__).resolve().parents[1] / "samples"


@pytest.fixture
def audit_dir(tmp_path: Path) -> Path:
    return write_audit(tmp_path / "audit")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_duckdb_views_match_the_bigquery_expectations(tmp_path: Path, name: str) -> None:
    """Over the rows of several runs, as BigQuery's views are (each request counted once)."""
    (view,) = [v for v in load_views() if v.name == name]
    (figure,) = run_views(open_audit(write_audit(tmp_path / "audit", ROWS)), [view])
    assert_view_rows(name, list(figure.rows))


def test_report_writes_a_page_with_every_view_and_its_plot(audit_dir: Path, tmp_path: Path) -> None:
    page = write_report(audit_dir, tmp_path / "report")
    text = page.read_text(encoding="utf-8")
    for view in load_views():
        if view.name not in PANELS:
            assert f"<section class=panel id='{view.name}' data-empty='no'>" in text
            assert html.escape(view.question.split("?")[0]) in text
    images = re.findall(r"<img src='?([^' >]+)'?", text)
    # the rows span two days: the hourly series, not histograms, and every daily plot
    assert sorted(images) == sorted(
        ["distributions.png", *(f"{name}.png" for name in PLOTS if name not in PANELS)]
    )
    for image in images:
        data = (page.parent / image).read_bytes()
        assert data.startswith(PNG_SIGNATURE) and len(data) > 5_000, image
    # the run at a glance: 5 manifests and 2 dead letters, 7 exclusions, 5 verified answers
    assert "<td>7 = 5 requests packed + 2 dead letters</td>" in text
    assert "7 excluded</td>" in text
    assert "<th>answers verified</th><td class=n>7</td>" in text


def test_report_is_deterministic(audit_dir: Path, tmp_path: Path) -> None:
    first = write_report(audit_dir, tmp_path / "a").read_text(encoding="utf-8")
    second = write_report(audit_dir, tmp_path / "b").read_text(encoding="utf-8")
    assert first == second


def test_tables_the_run_did_not_write_read_as_empty(audit_dir: Path, tmp_path: Path) -> None:
    for part in (audit_dir / "dead_letters").iterdir():
        part.unlink()
    (figure,) = run_views(
        open_audit(audit_dir), [v for v in load_views() if v.name == "dead_letter_rate"]
    )
    assert figure.rows == (("bv1", 5, 0, 0.0),)


def test_an_audit_dir_without_parquet_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no audit files"):
        write_report(tmp_path, tmp_path / "report")
    with pytest.raises(ValueError, match="not a directory"):
        write_report(tmp_path / "missing", tmp_path / "report")


def test_report_on_the_batch_demo_agrees_with_the_run_summary(tmp_path: Path) -> None:
    """The README demo, then `evpack report` on its output: same totals as the run's metrics."""
    run = batch.run(
        [
            f"--input={SAMPLES / 'requests.jsonl'}",
            f"--catalog={SAMPLES / 'catalog.jsonl'}",
            f"--config={SAMPLES / 'config.yaml'}",
            f"--output={tmp_path / 'run'}",
            "--event_time=2026-03-01T12:00:00Z",
        ]
    ).summary
    assert report_main(["--audit", str(tmp_path / "run"), "--out", str(tmp_path / "report")]) == 0
    con = open_audit(tmp_path / "run")
    figures = {f.view.name: f for f in run_views(con, load_views())}
    assert totals(con)["manifests"] == run.requests_in
    (rate,) = figures["dead_letter_rate"].rows
    assert rate[1:] == pytest.approx(
        (
            run.requests_in,
            run.dead_letters_total,
            run.dead_letters_total / (run.requests_in + run.dead_letters_total),
        )
    )
    excluded: dict[str, int] = {}
    for _day, _tenant, reason, count in figures["exclusions_daily"].rows:
        excluded[reason] = excluded.get(reason, 0) + count
    assert excluded == run.excluded
    page = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    # one event time: histograms and the plots not over time; no answers verified yet
    drawn = ["dead_letter_rate.png", "distributions.png", "exclusions_daily.png"]
    assert sorted(re.findall(r"<img src='?([^' >]+)'?", page)) == drawn
    assert "<section class=panel id='verification' data-empty='yes'>" in page


def test_a_view_whose_every_value_is_zero_is_a_table_not_an_empty_chart(
    audit_dir: Path, tmp_path: Path
) -> None:
    for part in (audit_dir / "dead_letters").iterdir():
        part.unlink()
    page = write_report(audit_dir, tmp_path / "report").read_text(encoding="utf-8")
    assert not (tmp_path / "report" / "dead_letter_rate.png").exists()
    section = page.split("id='dead_letter_rate'", 1)[1].split("</section>", 1)[0]
    assert "Every value is 0 in this run" in section and "<td>bv1</td>" in section


@pytest.mark.parametrize("stream_rows", [1, 3, 10_000])
def test_every_drill_down_row_is_in_its_csv(
    audit_dir: Path, tmp_path: Path, stream_rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Streamed a batch at a time (`audit.streamed`): every row, whatever the batch size."""
    monkeypatch.setattr("pipelines.report.audit.STREAM_ROWS", stream_rows)
    page = write_report(audit_dir, tmp_path / "report").read_text(encoding="utf-8")
    con = open_audit(audit_dir)
    for name, table in (("all_exclusions", "exclusions"), ("all_dead_letters", "dead_letters")):
        assert f"<a href='{name}.csv'>" in page
        with (tmp_path / "report" / f"{name}.csv").open(encoding="utf-8", newline="") as handle:
            rows = list(csv.reader(handle))
        (count,) = con.execute(f"SELECT COUNT(*) FROM audit.{table}").fetchone()
        assert len(rows) - 1 == count and rows[0][0] in ("request_id", "stage")
        assert f"All {count} rows (CSV)" in page


@given(st.lists(st.text(), min_size=1, max_size=5))
def test_a_csv_cell_never_runs_as_a_formula_and_reads_back(values: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        write_csv(Path(folder), "cells", ["value"], [[v] for v in values])
        with (Path(folder) / "cells.csv").open(encoding="utf-8", newline="") as handle:
            read = [row[0] for row in list(csv.reader(handle))[1:]]
    assert not any(cell.startswith(FORMULA_STARTS) for cell in read)
    kept = [c[1:] if v.startswith(FORMULA_STARTS) else c for c, v in zip(read, values, strict=True)]
    assert kept == values
