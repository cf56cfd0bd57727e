"""The report over a folder of runs: a headline row per run, newest first, each run's own
page beside it, their trend; and answer sets shown one at a time, never summed."""

import html
import re
import shutil
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from pipelines import report
from pipelines.batch import run
from pipelines.command import UsageError
from pipelines.verification import verify
from tests.batch_run import SAMPLES, _parquet, flags
from tests.test_report_browser import ANSWERS, render

NAMES = ("first", 'b <i>$5 & "é"', "third")
"""Run folders, one of them named with markup, a dollar sign, quotes and an accent."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three committed batch runs side by side, the last one verified twice (two answer
    sets: the second verify run a second later, so it is the newer)."""
    root = tmp_path_factory.mktemp("runs")
    for name in NAMES:
        extra = ("--prompt_format=anthropic_batch", "--event_time=2026-07-01T00:00:00Z")
        run([*flags(SAMPLES / "requests.jsonl", root / name), *extra])
        time.sleep(1.1)  # run ids and run records sort by their start, to the second
    for answer_set in ("older", "newer"):
        verify.run(
            [
                f"--answers={ANSWERS}",
                f"--run={root / 'third'}",
                f"--answer_set={answer_set}",
                "--runner=FnApiRunner",
            ]
        )
        time.sleep(1.1)
    return root


def _rows(page: str) -> list[list[str]]:
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", page)]


def test_a_folder_of_runs_gets_a_headline_row_per_run_newest_first(
    runs: Path, tmp_path: Path
) -> None:
    page = report.write_report(runs, tmp_path / "report")
    text = page.read_text(encoding="utf-8")
    rows = [r for r in _rows(text.split("<h2>", 1)[0]) if r]
    assert [r[0] for r in rows] == [html.escape(n) for n in reversed(NAMES)]
    prompts = {len(_parquet(str(runs / name / "manifests" / "*.parquet"))) for name in NAMES}
    assert {int(r[3]) for r in rows} == prompts
    assert rows[0][6] != "(none)" and rows[1][6] == "(none)"  # only the third was verified
    assert [r[7] for r in rows] == ["newer", "(none)", "(none)"]  # the set of the rate
    assert [r[8] for r in rows] == [html.escape(str(runs / n)) for n in reversed(NAMES)]
    jobs = text.split("<h2>Runs per job</h2>", 1)[1].split("<h2>", 1)[0]
    assert [r[:2] for r in _rows(jobs) if r] == [[r[8], "1"] for r in rows]
    assert (tmp_path / "report" / "trend.png").stat().st_size > 0
    for name in NAMES:  # each run's own page, linked from the overview
        assert (tmp_path / "report" / name / "index.html").is_file()
    links = re.findall(r"<a href='([^']+)'>", text)
    assert links == [f"{quote(n)}/index.html" for n in reversed(NAMES)]


def test_runs_one_folder_further_down_are_found_and_named_by_their_path(
    runs: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "runs"
    shutil.copytree(runs / "first", copy / "daily" / "qa" / "2026-12-01")
    shutil.copytree(runs / "third", copy / "daily" / "qa" / "2026-12-02")
    shutil.copytree(runs / "first", copy / "daily" / "top")
    text = report.write_report(copy / "daily", tmp_path / "report").read_text(encoding="utf-8")
    assert sorted(r[0] for r in _rows(text.split("<h2>")[0]) if r) == [
        "qa/2026-12-01",
        "qa/2026-12-02",
        "top",
    ]
    assert (tmp_path / "report" / "qa" / "2026-12-02" / "index.html").is_file()


def test_answer_sets_are_shown_one_at_a_time_the_newest_by_default(
    runs: Path, tmp_path: Path
) -> None:
    one_set = len(_parquet(str(runs / "third" / "verifications" / "newer" / "*.parquet")))
    text = report.write_report(runs / "third", tmp_path / "a").read_text(encoding="utf-8")
    assert "in answer set <code>newer</code> (others: older" in text
    assert f"<th>answers verified</th><td class=n>{one_set}</td>" in text
    chosen = report.write_report(runs / "third", tmp_path / "b", answer_set="older")
    assert "in answer set <code>older</code> (others: newer" in chosen.read_text(encoding="utf-8")
    with pytest.raises(UsageError, match=r"'missing' is not among the answer sets.*newer, older"):
        report.write_report(runs / "third", tmp_path / "c", answer_set="missing")


@pytest.mark.emulators
def test_the_overview_renders_without_errors(runs: Path, tmp_path: Path) -> None:
    page = report.write_report(runs, tmp_path / "report")
    dom, console = render(page, tmp_path / "profile")
    assert console == [] and 'data-images="ok"' in dom


def test_a_run_that_cannot_be_read_is_named_and_the_others_still_shown(
    runs: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy)
    for part in (copy / "first" / "manifests").iterdir():
        part.unlink()  # a file its run record lists is gone
    text = report.write_report(copy, tmp_path / "report").read_text(encoding="utf-8")
    assert "<h2>Runs not read</h2>" in text and "manifests" in text
    assert [r[0] for r in _rows(text.split("<h2>Trend</h2>")[0]) if r][:2] == [
        html.escape(n) for n in reversed(NAMES[1:])
    ]
