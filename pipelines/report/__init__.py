"""A static HTML report on a run, or on a folder of runs, for a person and for users
without BigQuery.

    evpack report --audit out/run1 --out report/
    evpack report --audit gs://bucket/runs/run1 --out report/
    evpack report --audit out --out report/    # every run under out/, side by side

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
newest unless `--answer_set` names another.

This module writes the pages; `audit` reads the run, `panels` makes each
section, `plots` draws, `markup` holds the HTML pieces, `runs` the overview.
"""

import argparse
import html
from importlib.resources.abc import Traversable
from pathlib import Path

import duckdb

from pipelines.command import CommandParser, UsageError, run_parsed
from pipelines.options.sinks import check_literal, check_writable
from pipelines.report.audit import (
    chosen_answer_set,
    open_audit,
    run_views,
    totals,
)
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
        chosen = chosen_answer_set(audit, answer_set)
        return _run_page(open_audit(audit, chosen), audit, out_dir, views_dir, chosen)
    headlines, unread = [], {}
    for name in names:
        run = f"{audit}/{name}"
        try:  # one run that cannot be read (a file gone) is named, the others still shown
            chosen = chosen_answer_set(run, answer_set, strict=False)
            con = open_audit(run, chosen)
        except ValueError as err:
            unread[name] = str(err)
            continue
        _run_page(con, run, out_dir / name, views_dir, chosen)
        headlines.append(headline(con, run, name))
    if not headlines:
        why = "; ".join(f"{name}: {reason}" for name, reason in sorted(unread.items()))
        raise UsageError(f"--audit {audit}: none of its runs can be read ({why})")
    return overview_page(audit, headlines, out_dir, unread)


def _run_page(
    con: duckdb.DuckDBPyConnection,
    audit: str,
    out_dir: Path,
    views_dir: Traversable,
    answer_set: str | None,
) -> Path:
    """One run's page from its tables in `con`."""
    known = list(PLOTS)
    views = sorted(
        load_views(views_dir),
        key=lambda v: (v.name not in PLOTS, known.index(v.name) if v.name in PLOTS else 0, v.name),
    )
    figures = {f.view.name: f for f in run_views(con, views)}
    out_dir.mkdir(parents=True, exist_ok=True)
    counts = totals(con)
    panels = [
        run_panel(con, audit, counts),
        distribution_panel(con, figures, out_dir),
        dead_letter_panel(con, figures, out_dir),
        exclusion_panel(con, out_dir),
        verification_panel(con, figures, audit, answer_set, out_dir),
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
    parser.add_argument("--audit", required=True, help="output directory of a run (local or gs://)")
    parser.add_argument(
        "--out", type=Path, default=Path("report"), help="where to write index.html and PNGs"
    )
    parser.add_argument(
        "--answer_set",
        help="the answer set whose verifications the pages show (default: the newest of each "
        "run; answer sets are never summed)",
    )
    parser.add_argument(
        "--views",
        type=Path,
        default=VIEWS_DIR,
        help="directory of the view SQL files (default: those installed with the package)",
    )
    return run_parsed(parser, _write, argv)


def _write(args: argparse.Namespace) -> int:
    check_writable(str(args.out), "out")  # a file there, or no write access: one line
    page = write_report(args.audit, args.out, args.views, args.answer_set)
    print(f"wrote {page}")
    return 0
