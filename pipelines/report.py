"""A static HTML report on one run, for a person and for users without BigQuery.

    evpack report --audit out/run1 --out report/
    evpack report --audit gs://bucket/runs/run1 --out report/

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
from apache_beam.io.filesystem import BeamIOError, CompressionTypes
from apache_beam.io.filesystems import FileSystems
from pydantic import BaseModel

from packer.answers import AnswerError, parse_prompt_line
from pipelines.command import CommandParser, UsageError, run_parsed
from pipelines.views import VIEWS_DIR, View, load_views
from schemas.arrow import arrow_schema
from schemas.run import RunRecord
from schemas.tables import AUDIT_TABLES
from transforms.record_files import matching_files, read_parquet

matplotlib.use("Agg")  # files only, no display
from matplotlib import pyplot as plt  # after choosing the backend

AUDIT_MODELS: dict[str, type[BaseModel]] = {name: t.model for name, t in AUDIT_TABLES.items()}
"""Audit tables as the file sinks name them (`schemas.tables`), with the model of their
rows (`verifications` is written by `evpack verify`)."""

SCHEMA = "audit"
MAX_TABLE_ROWS = 200
EXAMPLES = 5
"""Example rows under each reason, error or failing check."""
TOP_ERRORS = 5
"""Errors listed per dead-letter stage, commonest first."""


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

TIME_AXES = frozenset({"hour", "day"})
"""A plot over one of these is a time series: drawn only when the run spans several."""


@dataclass(frozen=True)
class Figure:
    """One view's result: its columns and rows, ordered for reading."""

    view: View
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


# --- reading the run ---------------------------------------------------------------------


def table_files(audit_dir: str, table: str) -> list[str]:
    """The files of one audit table: `<dir>/<table>/**/*.parquet` or `*.jsonl` (dead letters)."""
    found = matching_files(f"{audit_dir}/{table}/**")
    return [f for f in found if f.endswith((".parquet", ".jsonl"))]


def _read_bytes(path: str) -> bytes:
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        return handle.read()


def read_table(path: str, model: type[BaseModel]) -> pa.Table:
    """One audit file as Arrow rows of `model`'s derived schema (JSONL is validated first)."""
    schema = arrow_schema(model)
    if path.endswith(".parquet"):
        return read_parquet(path, schema=schema)
    lines = _read_bytes(path).decode("utf-8").splitlines()
    records = [model.model_validate_json(line).model_dump() for line in lines if line.strip()]
    return pa.Table.from_pylist(records, schema=schema)


def open_audit(audit_dir: str | Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with one table per audit table of `audit_dir` (UTC session)."""
    audit = str(audit_dir).rstrip("/")
    if FileSystems.get_scheme(audit) is None and not Path(audit).is_dir():
        raise ValueError(f"--audit {audit} is not a directory; pass the run's output directory")
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"CREATE SCHEMA {SCHEMA}")
    found = False
    for table, model in AUDIT_MODELS.items():
        try:
            files = table_files(audit, table)
        except BeamIOError as err:  # e.g. a bucket that does not exist
            raise UsageError(f"--audit {audit} cannot be listed: {err}") from err
        found = found or bool(files)
        parts = [read_table(f, model) for f in files] or [arrow_schema(model).empty_table()]
        con.register("_rows", pa.concat_tables(parts))
        con.execute(f"CREATE TABLE {SCHEMA}.{table} AS SELECT * FROM _rows")
        con.unregister("_rows")
    if not found:
        raise ValueError(
            f"no audit files under {audit} (expected e.g. {audit}/manifests/*.parquet)"
        )
    return con


def prompt_format(audit_dir: str) -> str | None:
    """The format of the run's prompt lines, as its first line reads (`packer.answers`), for a
    run without a run record (None: no prompts)."""
    for path in matching_files(f"{audit_dir}/prompts/*.jsonl"):
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
            for line in iter(handle.readline, b""):  # a shard can be large: its first line
                if line.strip():
                    try:
                        return parse_prompt_line(line.decode("utf-8")).prompt_format
                    except (AnswerError, UnicodeDecodeError):
                        return "unknown"
    return None


def run_records(audit_dir: str) -> list[RunRecord]:
    """The run records of `runs/` (a batch run writes one; older runs and streaming none)."""
    return [
        RunRecord.model_validate_json(line)
        for path in matching_files(f"{audit_dir}/runs/*.jsonl")
        for line in _read_bytes(path).decode("utf-8").splitlines()
        if line.strip()
    ]


def run_views(con: duckdb.DuckDBPyConnection, views: Sequence[View]) -> list[Figure]:
    """Each view's rows, sorted by every column so the page is deterministic."""
    figures = []
    for view in views:
        result = con.execute(f"SELECT * FROM ({view.duckdb_sql(SCHEMA)}) ORDER BY ALL")
        columns = tuple(d[0] for d in result.description)
        figures.append(Figure(view, columns, tuple(result.fetchall())))
    return figures


def _query(
    con: duckdb.DuckDBPyConnection, sql: str, *params: Any
) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    result = con.execute(sql.replace("{s}", SCHEMA), list(params))
    return tuple(d[0] for d in result.description), result.fetchall()


def totals(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Row counts of the audit tables: the run at a glance."""
    return {
        table: con.execute(f"SELECT COUNT(*) FROM {SCHEMA}.{table}").fetchone()[0]
        for table in AUDIT_MODELS
    }


# --- drawing -----------------------------------------------------------------------------


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
            ax.bar(positions, heights, bottom=bottom, label=label or None, color=palette(k % 20))
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


HISTOGRAMS: dict[str, tuple[str, str]] = {
    "prompt_tokens": ("budget.prompt_tokens", "prompt tokens (whole prompt)"),
    "evidence_tokens": ("budget.used", "evidence tokens packed"),
    "utilization": (
        "budget.used / NULLIF(budget.available, 0)",
        "evidence tokens / evidence budget",
    ),
    "evidence_blocks": ("len(evidence)", "evidence blocks per prompt"),
}
"""Per-request quantities drawn as histograms for a run without time: (SQL, axis label)."""


def draw_histograms(con: duckdb.DuckDBPyConnection, path: Path) -> dict[str, tuple[float, ...]]:
    """The per-request distributions of a run as one PNG; returns min, p50, p95, max of each."""
    fig, axes = plt.subplots(2, 2, figsize=(9, 5.4), dpi=100)
    summary = {}
    for ax, (name, (sql, label)) in zip(axes.flat, HISTOGRAMS.items(), strict=True):
        _, rows = _query(con, f"SELECT {sql} FROM {{s}}.manifests WHERE {sql} IS NOT NULL")
        values = [float(r[0]) for r in rows]
        ax.hist(values, bins=min(30, max(len(set(values)), 1)), color="C0", edgecolor="white")
        ax.set_xlabel(label)
        ax.set_ylabel("requests")
        ranked = sorted(values)
        summary[name] = tuple(
            ranked[max(0, math.ceil(q * len(ranked)) - 1)] for q in (0.0, 0.5, 0.95, 1.0)
        )
    fig.suptitle("per request")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return summary


# --- the page ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Panel:
    """One section of the page; `empty` is how to fill it when the run gave it no data."""

    key: str
    title: str
    intro: str
    body: str
    empty: str | None = None


def _cell(value: Any) -> str:
    """One table cell: numbers right-aligned, whole floats as integers."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        if isinstance(value, list):
            return f"<td>{html.escape('; '.join(_category(v) for v in value))}</td>"
        return f"<td>{html.escape(_category(value))}</td>"
    if isinstance(value, float) and not value.is_integer():
        return f"<td class=n>{value:.3f}</td>"
    return f"<td class=n>{int(value)}</td>"


def _table(columns: Sequence[str], rows: Sequence[Sequence[Any]], cls: str = "") -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows[:MAX_TABLE_ROWS]
    )
    more = len(rows) - MAX_TABLE_ROWS
    note = f"<p class=note>{more} more rows not shown.</p>" if more > 0 else ""
    return f"<table class='{cls}'><tr>{head}</tr>{body}</table>{note}"


def _pairs(pairs: Sequence[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><th>{html.escape(k)}</th>{_cell(v)}</tr>" for k, v in pairs)
    return f"<table class=pairs>{rows}</table>"


def _drill(items: Sequence[tuple[str, str]]) -> str:
    """(summary, body) pairs as drill-downs, the first one open so the page shows an example."""
    return "".join(
        f"<details{' open' if k == 0 else ''}><summary>{summary}</summary>{body}</details>"
        for k, (summary, body) in enumerate(items)
    )


def _excerpt(text: str | None, limit: int = 240) -> str:
    if text is None:
        return ""
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def _distinct(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    _, rows = _query(con, f"SELECT DISTINCT {sql} AS v FROM {{s}}.manifests ORDER BY v")
    values = [_category(r[0]) for r in rows]
    if len(values) > 3:
        return f"{len(values)} values: {', '.join(values[:3])}, …"
    return ", ".join(values) or "-"


def _span(con: duckdb.DuckDBPyConnection, column: str) -> str:
    _, ((low, high),) = _query(con, f"SELECT MIN({column}), MAX({column}) FROM {{s}}.manifests")
    if low is None:
        return "- (requests carry none)"
    return _category(low) if low == high else f"{_category(low)} to {_category(high)}"


def run_panel(con: duckdb.DuckDBPyConnection, audit: str, counts: dict[str, int]) -> Panel:
    """What ran: the run's identity from its manifests and files, and its totals."""
    _, ((candidates, packed),) = _query(
        con, "SELECT SUM(candidates_in), SUM(len(evidence)) FROM {s}.manifests"
    )
    _, sources = _query(
        con, "SELECT source, COUNT(*) FROM {s}.dead_letters GROUP BY source ORDER BY source"
    )
    runs = run_records(audit)
    fmt = ", ".join(sorted({r.prompt_format for r in runs})) or prompt_format(audit)
    unrecorded = "- (no run record in runs/: a streaming run, or an older batch run)"
    records = counts["manifests"] + counts["dead_letters"]
    pairs: list[tuple[str, Any]] = [
        ("run folder", audit),
        (
            "input",
            "; ".join(f"{r.input} ({r.input_format}, shape {r.input_shape})" for r in runs)
            or unrecorded,
        ),
        (
            "catalog",
            "; ".join(f"{r.catalog or 'Bigtable'} ({r.catalog_mode})" for r in runs) or unrecorded,
        ),
        ("builder version", _distinct(con, "builder_version")),
        ("config hash", _distinct(con, "config_hash")),
        ("prompt format", fmt or "- (no prompt files: prompts went to Pub/Sub, or none)"),
        ("model", _distinct(con, "model")),
        ("tokenizer", _distinct(con, "tokenizer")),
        ("order policy", _distinct(con, "order_policy")),
        ("input limit (tokens)", _distinct(con, "budget.input_limit")),
        ("reserved answer (tokens)", _distinct(con, "budget.reserved_answer")),
        ("event time", _span(con, "event_time")),
        ("as of", _span(con, "as_of")),
        ("catalog slices seen", _distinct(con, "catalog_version")),
        (
            "input files with dead letters",
            ", ".join(f"{s} ({n})" for s, n in sources) or "- (none refused a record)",
        ),
        (
            "input records",
            f"{records} = {counts['manifests']} requests packed "
            f"+ {counts['dead_letters']} dead letters",
        ),
        (
            "candidates",
            f"{candidates or 0} in: {packed or 0} packed as evidence, "
            f"{counts['exclusions']} excluded",
        ),
        ("answers verified", counts["verifications"]),
    ]
    intro = (
        "What ran: the input and catalog from the run record, the rest as the manifests "
        "record it (a run packed with one config and builder shows one value of each), "
        "and the run's totals."
    )
    empty = None if counts["manifests"] else "No manifests: the run packed no request."
    return Panel("run", "Run", intro, _pairs(pairs), empty)


def distribution_panel(
    con: duckdb.DuckDBPyConnection, figures: dict[str, Figure], out_dir: Path
) -> Panel:
    """Prompt sizes: histograms for a run within one hour (a batch run), else the hourly
    series of the `context_tokens_hourly` view."""
    _, ((hours,),) = _query(
        con, "SELECT COUNT(DISTINCT date_trunc('hour', event_time)) FROM {s}.manifests"
    )
    hourly = figures["context_tokens_hourly"]
    intro = "How much each request sends to the model, and how full its evidence budget is."
    if hours > 1:
        draw(hourly, PLOTS[hourly.view.name], out_dir / "distributions.png")
        body = "<img src=distributions.png alt='context tokens per hour'>" + _table(
            hourly.columns, hourly.rows
        )
        return Panel("distributions", "Prompt size over time", intro, body)
    _, ((requests,),) = _query(con, "SELECT COUNT(*) FROM {s}.manifests")
    if not requests:
        return Panel(
            "distributions",
            "Prompt size",
            intro,
            "",
            "No manifests to draw: run `evpack batch` with this folder as --output.",
        )
    summary = draw_histograms(con, out_dir / "distributions.png")
    rows = [(name, *values) for name, values in summary.items()]
    body = (
        "<p>Every request of this run shares one event time (a batch run), so the "
        "distribution over requests says more than a time series of one point.</p>"
        "<img src=distributions.png alt='histograms per request'>"
        + _table(("per request", "min", "p50", "p95", "max"), rows)
    )
    return Panel("distributions", "Prompt size", intro, body)


def dead_letter_panel(con: duckdb.DuckDBPyConnection, figures: dict[str, Figure]) -> Panel:
    """Dead letters by stage, the commonest errors of each with one example opened."""
    errors = figures["dead_letters_by_error"]
    intro = (
        "Input records the run refused, by stage: every refused record is one dead letter "
        "with its reason, never a crash. Numbers and hashes in errors are masked (N) so one "
        "cause counts once."
    )
    if not errors.rows:
        return Panel(
            "dead_letters",
            "Dead letters",
            intro,
            "",
            "No dead letters: every input record became a request.",
        )
    by_stage: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for row in errors.rows:
        by_stage[row[0]].append(row)
    stages = sorted(by_stage.items(), key=lambda kv: (-sum(r[2] for r in kv[1]), kv[0]))
    body = [_table(("stage", "dead letters"), [(s, sum(r[2] for r in rs)) for s, rs in stages])]
    for stage, rows in stages:
        top = sorted(rows, key=lambda r: (-r[2], r[1]))[:TOP_ERRORS]
        items = []
        for _, pattern, count, example, _source, _request in top:
            _, (payload_row,) = _query(
                con,
                "SELECT request_id, source, payload FROM {s}.dead_letters "
                "WHERE stage = ? AND error = ? ORDER BY source, payload LIMIT 1",
                stage,
                example,
            )
            detail = _pairs(
                [
                    ("example error", example),
                    ("source", payload_row[1]),
                    ("request id", payload_row[0] or "- (not readable)"),
                    ("payload", _excerpt(payload_row[2])),
                ]
            )
            items.append((f"{count} × {html.escape(pattern)}", detail))
        more = len(rows) - len(top)
        tail = f"<p class=note>{more} rarer errors not shown.</p>" if more > 0 else ""
        body.append(f"<h3>{html.escape(stage)}</h3>{_drill(items)}{tail}")
    return Panel("dead_letters", "Dead letters", intro, "".join(body))


def exclusion_panel(con: duckdb.DuckDBPyConnection) -> Panel:
    """Why candidates were left out: a reason opens to example requests."""
    _, reasons = _query(
        con,
        "SELECT reason, COUNT(*), COUNT(DISTINCT request_id) FROM {s}.exclusions "
        "GROUP BY reason ORDER BY COUNT(*) DESC, reason",
    )
    intro = (
        "Candidates that did not reach a prompt, each with exactly one reason. Open a "
        "reason for example requests and what the gate said."
    )
    if not reasons:
        return Panel(
            "exclusions", "Exclusions", intro, "", "No candidate was excluded in this run."
        )
    items = []
    for reason, count, requests in reasons:
        columns, rows = _query(
            con,
            "SELECT request_id, tenant_id, evidence_id, document_id, detail FROM {s}.exclusions "
            f"WHERE reason = ? ORDER BY request_id, evidence_id LIMIT {EXAMPLES}",
            reason,
        )
        summary = f"{html.escape(reason)}: {count} candidates in {requests} requests"
        items.append((summary, _table(columns, rows)))
    return Panel("exclusions", "Exclusions", intro, _drill(items))


def _verify_note(audit: str) -> str:
    """What verification decides and does not, and how to gate on it."""
    rows = html.escape(f"'{audit}/verifications/**/*.parquet'")
    return (
        "<p>What <code>evpack verify</code> checks, deterministically: cited labels exist in "
        "the packet, no id of other evidence leaks, sentences stating figures cite a block, "
        "those figures, dates and quotations appear in a cited block, flagged conflicts and "
        "uncovered facets are declared, an empty packet gets an abstention, and no text of a "
        "gated-out candidate appears. What it does not check: whether a cited block means "
        "what the sentence says (paraphrase, negation, units, spelled-out numbers); that "
        "needs a model.</p><p>To gate a release on it, fail when the share of checked "
        "answers that pass drops, e.g. in DuckDB: <code>SELECT COUNT_IF(passed) / "
        f"COUNT_IF(passed IS NOT NULL) FROM {rows}</code>, or on the "
        "<code>verification_daily</code> view in BigQuery.</p>"
    )


def verification_panel(
    con: duckdb.DuckDBPyConnection, figures: dict[str, Figure], audit: str
) -> Panel:
    """Verification by check, each failing check opened to its answers and sentences."""
    checks = figures["verification_checks"]
    _, statuses = _query(
        con, "SELECT status, COUNT(*) FROM {s}.verifications GROUP BY status ORDER BY status"
    )
    intro = "How model answers fared against their packets, check by check."
    if not statuses:
        hint = (
            f"No answers verified yet. Run <code>evpack verify --answers 'results/*.jsonl' "
            f"--run {html.escape(audit)}</code> with the batch API's results, then this "
            "report again."
        )
        return Panel("verification", "Verification", intro, _verify_note(audit), hint)
    answers = sum(n for _, n in statuses)
    body = [
        f"<p>{answers} answers: " + ", ".join(f"{n} {html.escape(s)}" for s, n in statuses),
        "</p>",
        _table(checks.columns, checks.rows),
    ]
    items = []
    failing = sorted((r for r in checks.rows if r[3]), key=lambda r: (-r[3], r[0]))
    for name, _answers, _passed, failed, _skipped in failing:
        columns, rows = _query(
            con,
            "SELECT v.answer_key, v.request_id, c.offending, c.sentences, c.detail "
            "FROM {s}.verifications AS v, UNNEST(v.checks) AS t(c) "
            f"WHERE c.name = ? AND c.outcome = 'fail' ORDER BY v.answer_key LIMIT {EXAMPLES}",
            name,
        )
        summary = f"{html.escape(name)}: {failed} failing answers"
        items.append((summary, _table(columns, rows, "wrap")))
    body.append(_drill(items))
    return Panel("verification", "Verification", intro, "".join(body) + _verify_note(audit))


def view_panel(figure: Figure, out_dir: Path) -> Panel:
    """One dashboard view: its plot when it has more than one point in time, and its rows."""
    plot = PLOTS.get(figure.view.name)
    xs = {row[figure.columns.index(plot.x)] for row in figure.rows} if plot else set()
    single_time = plot is not None and plot.x in TIME_AXES and len(xs) == 1
    image = ""
    if plot is not None and figure.rows and not single_time:
        draw(figure, plot, out_dir / f"{figure.view.name}.png")
        image = f"<img src='{figure.view.name}.png' alt='{html.escape(figure.view.name)}'>"
    note = (
        f"<p class=note>One {plot.x} in this run: the rows say it all.</p>"
        if single_time and plot
        else ""
    )
    empty = None
    if not figure.rows:
        tables = ", ".join(sorted(figure.view.tables))
        empty = f"No rows: the run wrote no {html.escape(tables)} rows for this view."
        if "verifications" in figure.view.tables:
            empty += " Run <code>evpack verify</code> on this run to fill it."
    body = image + note + (_table(figure.columns, figure.rows) if figure.rows else "")
    return Panel(figure.view.name, figure.view.name, html.escape(figure.view.question), body, empty)


def _render(panel: Panel) -> str:
    filled = panel.empty is None
    content = panel.body if filled else f"{panel.body}<p class=empty>{panel.empty}</p>"
    return (
        f"<section class=panel id='{html.escape(panel.key)}' "
        f"data-empty='{'no' if filled else 'yes'}'><h2>{html.escape(panel.title)}</h2>"
        f"<p class=intro>{panel.intro}</p>{content}</section>"
    )


_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:75em;color:#222;"
    "line-height:1.4;padding:0 1em}"
    "h1{margin-bottom:.2em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:1.6em}"
    "nav a{margin-right:1em}"
    "table{border-collapse:collapse;margin:.5em 0 1em}"
    "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "th{background:#f2f2f2}table.pairs td{max-width:60em;overflow-wrap:anywhere;text-align:left}"
    "table.wrap td{max-width:32em;overflow-wrap:anywhere}"
    "img{display:block;max-width:100%;margin:.5em 0}"
    "details{margin:.3em 0;padding:.3em .6em;background:#fafafa;border:1px solid #e5e5e5}"
    "summary{cursor:pointer;font-weight:600}"
    ".note,.intro{color:#555}.empty{background:#fff8e1;border-left:4px solid #f0b400;"
    "padding:.5em .8em}code{background:#f2f2f2;padding:0 .2em}"
)

_SCRIPT = (
    "addEventListener('load',function(){var bad=[];"
    "document.querySelectorAll('img').forEach(function(i){"
    "if(!i.complete||!i.naturalWidth){bad.push(i.getAttribute('src'));"
    "i.insertAdjacentHTML('afterend','<p class=empty>Image missing: '+i.getAttribute('src')"
    "+' (keep the PNGs beside index.html)</p>');}});"
    "document.body.dataset.images=bad.length?'missing':'ok';"
    "if(bad.length)console.error('report images missing: '+bad.join(', '));});"
)
"""Says in the page, and on the console for its test, when a PNG beside it is missing."""

PANELS: tuple[str, ...] = ("dead_letters_by_error", "verification_checks", "context_tokens_hourly")
"""Views drawn in the panels above the dashboard list rather than in it."""


def write_report(audit_dir: str | Path, out_dir: Path, views_dir: Traversable = VIEWS_DIR) -> Path:
    """Write `index.html` and its PNGs into `out_dir`; returns the page."""
    audit = str(audit_dir).rstrip("/")
    con = open_audit(audit)
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
        dead_letter_panel(con, figures),
        exclusion_panel(con),
        verification_panel(con, figures, audit),
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
        f"<style>{_STYLE}</style><script>{_SCRIPT}</script></head><body>"
        f"<h1>evidence-packer run report</h1><p class=note>{html.escape(audit)}</p>"
        f"<nav>{nav}</nav>{''.join(_render(p) for p in panels)}"
        "<h2 id=dashboards>Dashboard views</h2><p class=intro>The views "
        "<code>evpack tables</code> creates in BigQuery, computed here over the run's "
        f"files ({', '.join(PANELS)} feed the panels above).</p>"
        f"{''.join(_render(p) for p in dashboards)}</body></html>",
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
