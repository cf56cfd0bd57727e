"""The report as a person sees it: rendered by headless Chromium (Debian's `chromium`,
installed by .ci/setup-emulators), with no console error, every image loaded, and no
empty panel where the run has data."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pipelines import report
from pipelines.verification import verify
from pipelines.views import load_views
from tests.batch_run import SAMPLES, _parquet, flags, run_test_pipeline

pytestmark = pytest.mark.emulators

ANSWERS = SAMPLES / "answers_anthropic_good_and_bad.jsonl"
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",  # the tests run as root
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--enable-logging=stderr",
    "--v=0",
    "--virtual-time-budget=5000",  # let the load handler run before the DOM is dumped
)
PANEL = re.compile(r'<section class="panel" id="([^"]+)" data-empty="(yes|no)">')


def render(page: Path, profile: Path) -> tuple[str, list[str]]:
    """The page's DOM after load, and the console messages Chromium logged for it."""
    chromium = shutil.which("chromium")
    assert chromium, "chromium is missing: run .ci/setup-emulators (apt-get install chromium)"
    done = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout, console


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run") / "run"
    run_test_pipeline(
        [
            *flags(SAMPLES / "requests.jsonl", out, "--prompt_format=anthropic_batch"),
            "--event_time=2026-07-01T00:00:00Z",
        ]
    )
    return out


def test_a_run_before_verify_says_how_to_fill_the_verification_panel(
    run_dir: Path, tmp_path: Path
) -> None:
    page = report.write_report(run_dir, tmp_path / "report")
    dom, console = render(page, tmp_path / "profile")
    assert console == []
    assert 'data-images="ok"' in dom
    panels = dict(PANEL.findall(dom))
    assert panels["verification"] == "yes"
    assert panels["verification_daily"] == "yes"
    assert f"evpack verify --answers 'results/*.jsonl' --run {run_dir}" in dom
    assert f"<td>{SAMPLES / 'requests.jsonl'} (jsonl, shape auto)</td>" in dom  # the run record
    assert f"<td>{SAMPLES / 'catalog.jsonl'} (side_input)</td>" in dom
    filled = {k for k, v in panels.items() if v == "no"}
    assert {"run", "distributions", "dead_letters", "exclusions"} <= filled


def test_a_verified_run_fills_every_panel(run_dir: Path, tmp_path: Path) -> None:
    verify.run(
        [
            f"--answers={ANSWERS}",
            f"--run={run_dir}",
            f"--requests={SAMPLES / 'requests.jsonl'}",
            f"--output={tmp_path / 'run'}",
            "--runner=FnApiRunner",
        ]
    )
    shutil.copytree(run_dir, tmp_path / "run", dirs_exist_ok=True)
    page = report.write_report(tmp_path / "run", tmp_path / "report")
    dom, console = render(page, tmp_path / "profile")
    assert console == []
    assert 'data-images="ok"' in dom
    panels = dict(PANEL.findall(dom))
    dashboards = {v.name for v in load_views()} - set(report.PANELS)
    assert set(panels) == {"run", "distributions", "dead_letters", "exclusions", "verification"} | (
        dashboards
    )
    assert [k for k, v in panels.items() if v == "yes"] == []
    # drill-downs: a failing check opens to its answer and sentences, a reason to requests
    rows = _parquet(f"{tmp_path}/run/verifications/**/*.parquet")
    failing = sum("figures_supported" in r["failed_checks"] for r in rows)
    assert failing and f"figures_supported: {failing} failing answers" in dom
    assert re.search(r"unauthorized: \d+ candidates in \d+ requests", dom)
    # a batch run shares one event time: histograms, not a one-point series
    assert "distributions.png" in dom and "context_tokens_hourly.png" not in dom


def test_a_missing_image_is_a_console_error(run_dir: Path, tmp_path: Path) -> None:
    page = report.write_report(run_dir, tmp_path / "report")
    (page.parent / "distributions.png").unlink()
    dom, console = render(page, tmp_path / "profile")
    assert 'data-images="missing"' in dom
    assert any("report images missing: distributions.png" in line for line in console)
