"""A folder of runs: which of its subfolders are runs, a headline row for each, and the page
that sets them side by side.

`evpack report --audit out` over a folder whose subfolders are runs (each a batch run's
`--output`, or a streaming job's) writes each run's own page into a subfolder of the
report, and an overview above them: one row per run, newest first (run id, when it ran,
prompts, the share of candidates excluded, the dead-letter rate, the verify pass rate of
its chosen answer set, that answer set, its job), the runs of each job, and, with two
runs or more, those figures as a trend (the pass rate one line per answer set: two sets
are two models or two retries, never one series). A run is
read exactly as its own page reads it (`audit.open_audit`), so the two agree. Rejected:
one DuckDB over every run's files (runs of other configs and versions would mix in every
panel, and a run with a missing file would take the others down with it).
"""

import html
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from apache_beam.io.filesystems import FileSystems

from pipelines.report.audit import AuditRun, listing, totals
from pipelines.report.markup import SCRIPT, STYLE, table
from pipelines.report.plots import draw_trend
from schemas.tables import OUTPUTS
from transforms.run_folder import RECORD


@dataclass(frozen=True)
class Headline:
    """One run at a glance (a rate is None where its denominator is zero)."""

    name: str
    """The run's folder under the audited folder (its page is `<name>/index.html`)."""
    run_id: str | None
    ran_at: datetime | None
    prompts: int
    exclusion_share: float | None
    dead_letter_rate: float | None
    verify_pass_rate: float | None
    answer_set: str | None
    """The answer set `verify_pass_rate` is of (None: no answers verified)."""
    job: str | None
    """The job of its run record (`--audit_job`); None for a run without a record."""

    FIGURES = ("prompts", "exclusion_share", "dead_letter_rate", "verify_pass_rate")


def run_folders(audit: str) -> list[str]:
    """The names of the folders under `audit` that hold a run (a run record, or manifests),
    sorted: its subfolders, and the batch runs one level further down (`qa/run1`, in a
    subfolder that is no run itself: a folder per suite or per month); none when `audit`
    holds a run record or an output of its own (it is a run, perhaps one whose commit was
    cut off, which its page then names). Hidden folders (a run's staging folder) are no
    runs. Rejected: any depth (a run's own folders would be searched through, file by
    file, on every bucket)."""
    own = FileSystems.exists(f"{audit}/{RECORD}") or any(
        listing(audit, f"{name}/*") for name in OUTPUTS
    )
    if own:
        return []
    prefix = f"{audit}/"

    def parents(pattern: str, depth: int) -> set[str]:
        paths = (meta.path[len(prefix) :].split("/") for meta in listing(audit, pattern))
        return {
            "/".join(parts[:depth])
            for parts in paths
            if not any(p.startswith(".") for p in parts[:depth])
        }

    runs = parents(f"*/{RECORD}", 1) | parents("*/manifests/*", 1)
    nested = {name for name in parents(f"*/*/{RECORD}", 2) if name.split("/")[0] not in runs}
    return sorted(runs | nested)


def headline(run: AuditRun, name: str) -> Headline:
    """The headline figures of one run, from the tables its page reads."""
    con = run.con
    counts = totals(con)
    (candidates,) = con.execute("SELECT SUM(candidates_in) FROM audit.manifests").fetchone()
    (passed, checked) = con.execute(
        "SELECT COUNT_IF(passed), COUNT_IF(passed IS NOT NULL) FROM audit.verifications"
    ).fetchone()
    (latest,) = con.execute("SELECT MAX(event_time) FROM audit.manifests").fetchone()
    run_id = run.run_id
    received = counts["manifests"] + counts["dead_letters"]
    return Headline(
        name=name,
        run_id=run_id,
        ran_at=started(run_id) or latest,
        prompts=counts["manifests"],
        exclusion_share=counts["exclusions"] / candidates if candidates else None,
        dead_letter_rate=counts["dead_letters"] / received if received else None,
        verify_pass_rate=passed / checked if checked else None,
        answer_set=run.answer_set if checked else None,
        job=run.records[-1].job if run.records else None,
    )


def job_history(
    headlines: list[Headline],
) -> list[tuple[str, int, datetime | None, datetime | None]]:
    """Per job (a run without a record: "(none)"), its runs and when the first and the last
    ran; the job most recently run first."""
    jobs: dict[str, list[Headline]] = {}
    for h in headlines:
        jobs.setdefault(h.job or "(none)", []).append(h)
    rows = []
    for job, runs in jobs.items():
        times = sorted(h.ran_at for h in runs if h.ran_at is not None)
        rows.append((job, len(runs), times[0] if times else None, times[-1] if times else None))
    return sorted(rows, key=lambda r: (r[3] is not None, r[3], r[0]), reverse=True)


def started(run_id: str | None) -> datetime | None:
    """When a run started, as its id says (`schemas.run.new_run_id`: its UTC start to the
    second); None for a run without one. Not the run record's `event_time`, which a run
    may set to any time (`--event_time`)."""
    try:
        return datetime.strptime((run_id or "")[:15], "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return None


def overview_page(
    audit: str, headlines: list[Headline], out_dir: Path, unread: dict[str, str]
) -> Path:
    """The overview `index.html`: the runs newest first, each linking to its page, and the
    trend of their figures (a table alone for one run: a trend of one point says nothing);
    `unread`, the runs that could not be read, with why."""
    chronological = sorted(headlines, key=lambda h: (h.ran_at is not None, h.ran_at, h.name))
    ordered = chronological[::-1]
    rows = [
        (
            h.name,
            h.run_id,
            h.ran_at,
            *(getattr(h, f) for f in Headline.FIGURES),
            h.answer_set,
            h.job,
        )
        for h in ordered
    ]
    links = "".join(
        f"<li><a href='{html.escape(quote(h.name))}/index.html'>{html.escape(h.name)}</a></li>"
        for h in ordered
    )
    trend = ""
    if len(headlines) > 1:
        draw_trend(
            [h.name for h in chronological],
            {f: [getattr(h, f) for h in chronological] for f in Headline.FIGURES},
            out_dir / "trend.png",
            {"verify_pass_rate": [h.answer_set or "" for h in chronological]},
        )
        trend = "<h2>Trend</h2><img src=trend.png alt='headline figures across runs'>"
    out_dir.mkdir(parents=True, exist_ok=True)
    page = out_dir / "index.html"
    page.write_text(
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>evidence-packer runs: {html.escape(audit)}</title><style>{STYLE}</style>"
        f"<script>{SCRIPT}</script>"
        f"</head><body><h1>evidence-packer runs</h1><p class=note>{html.escape(audit)}: "
        f"{len(headlines)} runs, newest first.</p>"
        + table(("run", "run id", "ran at", *Headline.FIGURES, "answer set", "job"), rows)
        + "<p class=note>exclusion_share: candidates excluded / candidates in; "
        "dead_letter_rate: dead letters / (requests + dead letters); verify_pass_rate: "
        "answers passing / answers checked, in each run's chosen answer set (named beside "
        "it: rates of two sets compare two models or retries, not two runs).</p>"
        + "<h2>Runs per job</h2>"
        + table(("job", "runs", "first ran", "last ran"), job_history(headlines))
        + trend
        + (
            "<h2>Runs not read</h2>" + table(("run", "why"), sorted(unread.items()))
            if unread
            else ""
        )
        + f"<h2>Each run</h2><ul>{links}</ul></body></html>",
        encoding="utf-8",
    )
    return page
