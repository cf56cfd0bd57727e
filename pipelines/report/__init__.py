"""A static HTML report on a run, a folder of runs, or the runs of a BigQuery dataset.

    evpack report --audit out/run1 --out report/
    evpack report --audit gs://bucket/runs/run1 --out report/
    evpack report --audit out --out report/    # every run under out/, side by side
    evpack report --bigquery_dataset my-project.evpack --out report/   # its newest runs

One folder: `index.html` and its PNGs, nothing fetched (no CDN, no script
library), so it opens offline and can be attached to a ticket. The page reads
top down as one looks at a run: what ran (inputs, catalog, config hash, prompt
format, event time, builder version, from the run record of `runs/`, the
manifests and the prompt files), how large the prompts were, why records were
refused (dead letters by stage, commonest errors first, an example each), why
candidates were left out (a reason opens to example requests), how model
answers fared (per check, the failing answers with their sentences), then
every dashboard view.

Figures are the dashboard views (`pipelines.views`), run by DuckDB over the
audit tables, so the report and a BigQuery dashboard agree; the drill-downs
(examples) are plain queries over the same tables. Distributions fit the run:
a batch run stamps every request with one event time, so a time series would
be one point; a run within one hour gets histograms instead, a longer one the
hourly series. A panel without data says how to fill it. A table the run did
not write (e.g. no dead letters) is read as empty, with its schema derived
from `schemas/`. Audit files are read through Beam's filesystems, local or
`gs://`. Rejected: an interactive page on a chart library (a CDN breaks
offline, a vendored bundle is a second toolchain), and one HTML file with
inlined images (the PNGs are also useful alone).

A folder whose subfolders are runs gets an overview (`runs`): a headline row per
run and their trend, each run's own page beside it. Answers verified more than once
(`evpack verify --answer_set`) are never summed: a page shows one answer set, the
newest unless `--answer_set` names another. A BigQuery dataset is read as a folder of
runs whose runs are its run ids (`dataset`), the newest `--last_runs`.

This module writes the pages; `audit` reads the run, `panels` makes each
section, `plots` draws, `markup` holds the HTML pieces, `runs` the overview,
`dataset` reads a BigQuery dataset's runs.
"""

import argparse
import html
from collections.abc import Iterable, Iterator
from importlib.resources.abc import Traversable
from pathlib import Path

from pipelines.command import CommandParser, UsageError, run_parsed
from pipelines.options.flags import Flag, declare
from pipelines.options.sinks import check_literal, check_writable, dataset_name
from pipelines.report.audit import AuditRun, folder_run, run_views, totals
from pipelines.report.dataset import TIMEOUT_SECONDS, dataset_runs
from pipelines.report.markup import SCRIPT, STYLE, render
from pipelines.report.panels import (
    dead_letter_panel,
    distribution_panel,
    exclusion_panel,
    run_panel,
    verification_panel,
    view_panel,
)
from pipelines.report.plots import PLOTS
from pipelines.report.runs import headline, overview_page, run_folders
from pipelines.views import VIEWS_DIR, load_views

LAST_RUNS = 20
"""Runs a report over a BigQuery dataset reads by default: its newest (a dataset keeps
every run, and a page a run is drawn for each)."""

DATASET_FLAGS = (
    Flag(
        "last_runs",
        "with --bigquery_dataset: how many of the newest runs to read",
        LAST_RUNS,
        int,
        bound="positive",
    ),
    Flag(
        "timeout_seconds",
        "with --bigquery_dataset: how long BigQuery may stay unreachable",
        TIMEOUT_SECONDS,
        int,
        bound="positive",
    ),
)
"""The report's numbers, bounded as every command's are (`pipelines.options.flags`)."""

PANELS: tuple[str, ...] = ("dead_letters_by_error", "verification_checks", "context_tokens_hourly")
"""Views drawn in the panels above the dashboard list rather than in it."""


def write_report(
    audit_dir: str | Path,
    out_dir: Path,
    views_dir: Traversable = VIEWS_DIR,
    answer_set: str | None = None,
) -> Path:
    """Write `index.html` and its PNGs into `out_dir` (for a folder of runs, the overview
    and each run's page in a subfolder); returns the page."""
    audit = str(audit_dir).rstrip("/")
    check_literal(audit, "audit")
    names = run_folders(audit)
    if not names:
        return _run_page(folder_run(audit, answer_set), out_dir, views_dir)

    def runs() -> Iterator[tuple[str, AuditRun | str]]:
        for name in names:
            try:  # one run that cannot be read (a file gone) is named, the others still shown
                yield name, folder_run(f"{audit}/{name}", answer_set, strict=False)
            except ValueError as err:
                yield name, str(err)

    return _overview(f"--audit {audit}", audit, runs(), out_dir, views_dir)


def write_dataset_report(
    dataset: str,
    out_dir: Path,
    views_dir: Traversable = VIEWS_DIR,
    answer_set: str | None = None,
    last_runs: int = LAST_RUNS,
    timeout_seconds: float = TIMEOUT_SECONDS,
) -> Path:
    """Write the overview of the newest `last_runs` runs in a BigQuery dataset, and each
    run's page in a subfolder named by its run id (`dataset`); returns the overview."""
    runs = dataset_runs(dataset_name(dataset), answer_set, last_runs, timeout_seconds)
    named = ((run.run_id or run.where, run) for run in runs)
    return _overview(f"--bigquery_dataset {dataset}", dataset, named, out_dir, views_dir)


def _overview(
    flag: str,
    where: str,
    runs: Iterable[tuple[str, AuditRun | str]],
    out_dir: Path,
    views_dir: Traversable,
) -> Path:
    """Each run's page in a subfolder by its name and the overview above them; a run given
    as a string could not be read, and is named on the overview with that reason."""
    headlines, unread = [], {}
    for name, run in runs:
        if isinstance(run, str):
            unread[name] = run
            continue
        _run_page(run, out_dir / name, views_dir)
        headlines.append(headline(run, name))
    if not headlines:
        why = "; ".join(f"{name}: {reason}" for name, reason in sorted(unread.items()))
        raise UsageError(f"{flag}: none of its runs can be read ({why})")
    return overview_page(where, headlines, out_dir, unread)


def _run_page(run: AuditRun, out_dir: Path, views_dir: Traversable) -> Path:
    """One run's page from its tables."""
    con, audit = run.con, run.where
    known = list(PLOTS)
    views = sorted(
        load_views(views_dir),
        key=lambda v: (v.name not in PLOTS, known.index(v.name) if v.name in PLOTS else 0, v.name),
    )
    figures = {f.view.name: f for f in run_views(con, views)}
    out_dir.mkdir(parents=True, exist_ok=True)
    counts = totals(con)
    panels = [
        run_panel(run, counts),
        distribution_panel(con, figures, out_dir),
        dead_letter_panel(con, figures, out_dir),
        exclusion_panel(con, out_dir),
        verification_panel(run, figures, out_dir),
    ]
    dashboards = [view_panel(f, out_dir) for name, f in figures.items() if name not in PANELS]
    nav = (
        "".join(f"<a href='#{html.escape(p.key)}'>{html.escape(p.title)}</a>" for p in panels)
        + "<a href='#dashboards'>Dashboard views</a>"
    )
    page = out_dir / "index.html"
    page.write_text(
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>evidence-packer run report: {html.escape(audit)}</title>"
        f"<style>{STYLE}</style><script>{SCRIPT}</script></head><body>"
        f"<h1>evidence-packer run report</h1><p class=note>{html.escape(audit)}</p>"
        f"<nav>{nav}</nav>{''.join(render(p) for p in panels)}"
        "<h2 id=dashboards>Dashboard views</h2><p class=intro>The views "
        "<code>evpack tables</code> creates in BigQuery, computed here over the run's "
        f"files ({', '.join(PANELS)} feed the panels above).</p>"
        f"{''.join(render(p) for p in dashboards)}</body></html>",
        encoding="utf-8",
    )
    return page


def main(argv: list[str] | None = None) -> int:
    """Console entry (`evpack report`); a bad directory exits 2 with the reason."""
    parser = CommandParser("evpack report", __doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--audit", help="output folder of a run, or a folder of runs (local or gs://)"
    )
    source.add_argument(
        "--bigquery_dataset",
        help="a BigQuery dataset the runs wrote to, <project>.<dataset>: its newest runs",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("report"), help="where to write index.html and PNGs"
    )
    parser.add_argument(
        "--answer_set",
        help="the answer set whose verifications the pages show (default: the newest of each "
        "run; answer sets are never summed)",
    )
    declare(parser, DATASET_FLAGS)
    parser.add_argument(
        "--views",
        type=Path,
        default=VIEWS_DIR,
        help="directory of the view SQL files (default: those installed with the package)",
    )
    return run_parsed(parser, _write, argv)


def _write(args: argparse.Namespace) -> int:
    bad = [p for f in DATASET_FLAGS if (p := f.out_of_bound(getattr(args, f.name)))]
    if bad:
        raise UsageError("; ".join(bad))
    check_writable(str(args.out), "out")  # a file there, or no write access: one line
    if args.bigquery_dataset is not None:
        page = write_dataset_report(
            args.bigquery_dataset,
            args.out,
            args.views,
            args.answer_set,
            args.last_runs,
            args.timeout_seconds,
        )
    else:
        page = write_report(args.audit, args.out, args.views, args.answer_set)
    print(f"wrote {page}")
    return 0
