"""A static HTML report over the audit files of a run, for users without BigQuery.

    evpack report --audit out/run1 --out report/


The figures are the dashboard views (`pipelines.views`) run by DuckDB over the
audit tables, each drawn as a matplotlib PNG and listed as a table under the
question it answers. A table the run did not write (e.g. no dead letters) is
read as empty, with its schema derived from `schemas/`. Local directories only.
"""

import argparse
import html
import math
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Literal

import duckdb
import matplotlib
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from pipelines.command import CommandParser, run_parsed
from pipelines.views import VIEWS_DIR, View, load_views
from schemas.arrow import arrow_schema
from schemas.tables import AUDIT_TABLES

matplotlib.use("Agg")  # files only, no display
from matplotlib import pyplot as plt  # after choosing the backend

AUDIT_MODELS: dict[str, type[BaseModel]] = {name: t.model for name, t in AUDIT_TABLES.items()}
"""Audit tables as the file sinks name them (`schemas.tables`), with the model of their
rows (`verifications` is written by `evpack verify`)."""

SCHEMA = "audit"
MAX_TABLE_ROWS = 200


@dataclass(frozen=True)
class Plot:
    """How to draw a view: one bar or line per (x, series), summing rows that share both."""

    kind: Literal["bars", "stacked", "lines"]
    x: str
    y: tuple[str, ...]
    series: str | None = None
    ylabel: str = ""


PLOTS: dict[str, Plot] = {
    "context_tokens_hourly": Plot(
        "lines", "hour", ("prompt_tokens_p50", "prompt_tokens_p95"), "tenant_id", "prompt tokens"
    ),
    "exclusions_daily": Plot("stacked", "tenant_id", ("exclusions",), "reason", "candidates"),
    "facet_coverage_daily": Plot(
        "bars", "day", ("uncovered_share",), "tenant_id", "share of requests"
    ),
    "conflicts_daily": Plot("bars", "day", ("conflicts",), "tenant_id", "conflicts"),
    "budget_utilization_daily": Plot(
        "bars", "day", ("utilization_avg",), "tenant_id", "evidence tokens / available"
    ),
    "dead_letter_rate": Plot("bars", "builder_version", ("dead_letter_rate",), None, "share"),
    "verification_daily": Plot(
        "bars", "day", ("passed", "unsupported_figures", "leaks"), "tenant_id", "answers"
    ),
}
"""The drawing of each known view; a view without one is shown as a table only."""


@dataclass(frozen=True)
class Figure:
    """One view's result: its columns and rows, ordered for reading."""

    view: View
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


def table_files(audit_dir: Path, table: str) -> list[Path]:
    """The files of one audit table: `<dir>/<table>/**/*.parquet` or `*.jsonl` (dead letters)."""
    folder = audit_dir / table
    return sorted([*folder.rglob("*.parquet"), *folder.rglob("*.jsonl")])


def read_table(path: Path, model: type[BaseModel]) -> pa.Table:
    """One audit file as Arrow rows of `model`'s derived schema (JSONL is validated first)."""
    schema = arrow_schema(model)
    if path.suffix == ".parquet":
        return pq.read_table(path, schema=schema)
    with path.open(encoding="utf-8") as lines:
        records = [model.model_validate_json(line).model_dump() for line in lines if line.strip()]
    return pa.Table.from_pylist(records, schema=schema)


def open_audit(audit_dir: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with one table per audit table of `audit_dir` (UTC session)."""
    if not audit_dir.is_dir():
        raise ValueError(f"--audit {audit_dir} is not a directory; pass the run's output directory")
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"CREATE SCHEMA {SCHEMA}")
    found = False
    for table, model in AUDIT_MODELS.items():
        files = table_files(audit_dir, table)
        found = found or bool(files)
        parts = [read_table(f, model) for f in files] or [arrow_schema(model).empty_table()]
        con.register("_rows", pa.concat_tables(parts))
        con.execute(f"CREATE TABLE {SCHEMA}.{table} AS SELECT * FROM _rows")
        con.unregister("_rows")
    if not found:
        raise ValueError(
            f"no audit files under {audit_dir} (expected e.g. {audit_dir}/manifests/*.parquet)"
        )
    return con


def run_views(con: duckdb.DuckDBPyConnection, views: Sequence[View]) -> list[Figure]:
    """Each view's rows, sorted by every column so the page is deterministic."""
    figures = []
    for view in views:
        result = con.execute(f"SELECT * FROM ({view.duckdb_sql(SCHEMA)}) ORDER BY ALL")
        columns = tuple(d[0] for d in result.description)
        figures.append(Figure(view, columns, tuple(result.fetchall())))
    return figures


def _category(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, date):
        return value.isoformat()
    return "(none)" if value is None else str(value)


def draw(figure: Figure, plot: Plot, path: Path) -> None:
    """Draw one view as a PNG at `path`."""
    index = {name: i for i, name in enumerate(figure.columns)}
    xs: list[str] = []
    values: dict[tuple[str, str], float] = defaultdict(float)
    for row in figure.rows:
        x = _category(row[index[plot.x]])
        if x not in xs:
            xs.append(x)
        group = _category(row[index[plot.series]]) if plot.series else ""
        for y in plot.y:
            label = f"{group} {y}".strip() if len(plot.y) > 1 else group
            values[(label, x)] += float(row[index[y]] or 0)
    labels = list(dict.fromkeys(label for label, _ in values))
    fig, ax = plt.subplots(figsize=(8, 3.6), dpi=100)
    positions = range(len(xs))
    if plot.kind == "lines":
        colors: dict[str, str] = {}
        for label in labels:
            group = label.rsplit(" ", 1)[0]
            color = colors.setdefault(group, f"C{len(colors) % 10}")
            style = "--" if len(plot.y) > 1 and label.endswith(plot.y[-1]) else "-"
            heights = [values.get((label, x), math.nan) for x in xs]  # gaps where no requests
            ax.plot(xs, heights, style, color=color, marker="o", label=label)
    elif plot.kind == "stacked":
        bottom = [0.0] * len(xs)
        palette = plt.get_cmap("tab20")  # up to 20 reasons, each its own color
        for k, label in enumerate(labels):
            heights = [values.get((label, x), 0.0) for x in xs]
            ax.bar(positions, heights, bottom=bottom, label=label, color=palette(k % 20))
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    else:
        width = 0.8 / max(len(labels), 1)
        for k, label in enumerate(labels):
            offsets = [p - 0.4 + width * (k + 0.5) for p in positions]
            heights = [values.get((label, x), math.nan) for x in xs]
            ax.bar(offsets, heights, width, label=label or None)
    if plot.kind != "lines":
        ax.set_xticks(list(positions), xs)
    ax.set_xlabel(plot.x)
    ax.set_ylabel(plot.ylabel)
    ax.set_title(figure.view.name)
    if any(labels):
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.tick_params(axis="x", labelrotation=20)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return html.escape(_category(value))


def _section(figure: Figure, image: str | None) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in figure.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>"
        for row in figure.rows[:MAX_TABLE_ROWS]
    )
    more = len(figure.rows) - MAX_TABLE_ROWS
    note = f"<p class=note>{more} more rows not shown.</p>" if more > 0 else ""
    empty = "<p class=note>No rows.</p>" if not figure.rows else ""
    img = f'<img src="{image}" alt="{html.escape(figure.view.name)}">' if image else ""
    return (
        f'<section id="{html.escape(figure.view.name)}"><h2>{html.escape(figure.view.name)}</h2>'
        f"<p>{html.escape(figure.view.question)}</p>{img}{empty}"
        f"<table><tr>{head}</tr>{body}</table>{note}</section>"
    )


_STYLE = (
    "body{font-family:sans-serif;margin:2em;max-width:72em;color:#222}"
    "table{border-collapse:collapse;margin:.5em 0 2em}"
    "td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}"
    "th{background:#f2f2f2}img{display:block;max-width:100%}.note{color:#666}"
)


def totals(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Row counts of the audit tables: the run at a glance."""
    return {
        table: con.execute(f"SELECT COUNT(*) FROM {SCHEMA}.{table}").fetchone()[0]
        for table in AUDIT_MODELS
    }


def write_report(audit_dir: Path, out_dir: Path, views_dir: Traversable = VIEWS_DIR) -> Path:
    """Write `index.html` and one PNG per plotted view into `out_dir`; returns the page."""
    con = open_audit(audit_dir)
    known = list(PLOTS)
    views = sorted(
        load_views(views_dir),
        key=lambda v: (v.name not in PLOTS, known.index(v.name) if v.name in PLOTS else 0, v.name),
    )
    figures = run_views(con, views)
    out_dir.mkdir(parents=True, exist_ok=True)
    sections = []
    for figure in figures:
        plot = PLOTS.get(figure.view.name)
        image = None
        if plot is not None and figure.rows:
            image = f"{figure.view.name}.png"
            draw(figure, plot, out_dir / image)
        sections.append(_section(figure, image))
    counts = "".join(
        f"<tr><th>{html.escape(t)}</th><td>{n}</td></tr>" for t, n in totals(con).items()
    )
    page = out_dir / "index.html"
    page.write_text(
        "<!doctype html><html><head><meta charset=utf-8>"
        f"<title>evidence-packer audit report</title><style>{_STYLE}</style></head><body>"
        f"<h1>evidence-packer audit report</h1><p>Audit: {html.escape(str(audit_dir))}</p>"
        f"<table>{counts}</table>{''.join(sections)}</body></html>",
        encoding="utf-8",
    )
    return page


def main(argv: list[str] | None = None) -> int:
    """Console entry (`evpack report`); a bad directory exits 2 with the reason."""
    parser = CommandParser("evpack report", __doc__.splitlines()[0])
    parser.add_argument(
        "--audit", type=Path, required=True, help="output directory of a run (local)"
    )
    parser.add_argument(
        "--out", type=Path, default=Path("report"), help="where to write index.html and PNGs"
    )
    parser.add_argument(
        "--views",
        type=Path,
        default=VIEWS_DIR,
        help="directory of the view SQL files (default: those installed with the package)",
    )
    return run_parsed(parser, _write, argv)


def _write(args: argparse.Namespace) -> int:
    page = write_report(args.audit, args.out, args.views)
    print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
