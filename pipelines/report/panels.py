"""The panels of the page, top down: the run, prompt sizes, dead letters, exclusions,
verification, and one per dashboard view.

Figures are the dashboard views, and drill-downs (examples) plain queries over
the same tables. A panel without data says how to fill it.
"""

import html
from collections import defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import quote

import duckdb

from pipelines.report.audit import AuditRun, ViewResult, query, streamed
from pipelines.report.downloads import write_csv
from pipelines.report.markup import Panel, category, drill, excerpt, pairs_table, table
from pipelines.report.plots import PLOTS, TIME_AXES, draw, draw_histograms

EXAMPLES = 5
"""Example rows under each reason, error or failing check."""
TOP_ERRORS = 5
"""Errors listed per dead-letter stage, commonest first."""


def _distinct(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    _, rows = query(con, f"SELECT DISTINCT {sql} AS v FROM {{s}}.manifests ORDER BY v")
    values = [category(r[0]) for r in rows]
    if len(values) > 3:
        return f"{len(values)} values: {', '.join(values[:3])}, …"
    return ", ".join(values) or "-"


def _span(con: duckdb.DuckDBPyConnection, column: str) -> str:
    _, ((low, high),) = query(con, f"SELECT MIN({column}), MAX({column}) FROM {{s}}.manifests")
    if low is None:
        return "- (requests carry none)"
    return category(low) if low == high else f"{category(low)} to {category(high)}"


def run_panel(run: AuditRun, counts: dict[str, int]) -> Panel:
    """What ran: the run's identity from its manifests and files, and its totals."""
    con, runs, fmt = run.con, run.records, run.prompt_format
    _, ((candidates, packed),) = query(
        con, "SELECT SUM(candidates_in), SUM(len(evidence)) FROM {s}.manifests"
    )
    _, sources = query(
        con, "SELECT source, COUNT(*) FROM {s}.dead_letters GROUP BY source ORDER BY source"
    )
    unrecorded = "- (no run record in runs/: a streaming run, or an older batch run)"
    records = counts["manifests"] + counts["dead_letters"]
    pairs: list[tuple[str, Any]] = [
        ("run", run.where),
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
    return Panel("run", "Run", intro, pairs_table(pairs), empty)


def distribution_panel(
    con: duckdb.DuckDBPyConnection, figures: dict[str, ViewResult], out_dir: Path
) -> Panel:
    """Prompt sizes: histograms for a run within one hour (a batch run), else the hourly
    series of the `context_tokens_hourly` view."""
    _, ((hours,),) = query(
        con, "SELECT COUNT(DISTINCT date_trunc('hour', event_time)) FROM {s}.manifests"
    )
    hourly = figures["context_tokens_hourly"]
    intro = "How much each request sends to the model, and how full its evidence budget is."
    if hours > 1:
        draw(hourly, PLOTS[hourly.view.name], out_dir / "distributions.png")
        body = "<img src=distributions.png alt='context tokens per hour'>" + table(
            hourly.columns, hourly.rows
        )
        return Panel("distributions", "Prompt size over time", intro, body)
    _, ((requests,),) = query(con, "SELECT COUNT(*) FROM {s}.manifests")
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
        + table(("per request", "min", "p50", "p95", "max"), rows)
    )
    return Panel("distributions", "Prompt size", intro, body)


def dead_letter_panel(
    con: duckdb.DuckDBPyConnection, figures: dict[str, ViewResult], out_dir: Path
) -> Panel:
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
    columns, every = streamed(
        con,
        "SELECT stage, error, source, request_id, payload FROM {s}.dead_letters "
        "ORDER BY stage, error, source, payload",
    )
    body = [
        table(("stage", "dead letters"), [(s, sum(r[2] for r in rs)) for s, rs in stages]),
        write_csv(out_dir, "all_dead_letters", columns, every),
    ]
    for stage, rows in stages:
        top = sorted(rows, key=lambda r: (-r[2], r[1]))[:TOP_ERRORS]
        items = []
        for _, pattern, count, example, _source, _request in top:
            _, (payload_row,) = query(
                con,
                "SELECT request_id, source, payload FROM {s}.dead_letters "
                "WHERE stage = ? AND error = ? ORDER BY source, payload LIMIT 1",
                stage,
                example,
            )
            detail = pairs_table(
                [
                    ("example error", example),
                    ("source", payload_row[1]),
                    ("request id", payload_row[0] or "- (not readable)"),
                    ("payload", excerpt(payload_row[2])),
                ]
            )
            items.append((f"{count} × {html.escape(category(pattern))}", detail))
        more = len(rows) - len(top)
        tail = f"<p class=note>{more} rarer errors not shown.</p>" if more > 0 else ""
        body.append(f"<h3>{html.escape(stage)}</h3>{drill(items)}{tail}")
    return Panel("dead_letters", "Dead letters", intro, "".join(body))


def exclusion_panel(con: duckdb.DuckDBPyConnection, out_dir: Path) -> Panel:
    """Why candidates were left out: a reason opens to example requests."""
    _, reasons = query(
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
        columns, rows = query(
            con,
            "SELECT request_id, tenant_id, evidence_id, document_id, detail FROM {s}.exclusions "
            f"WHERE reason = ? ORDER BY request_id, evidence_id LIMIT {EXAMPLES}",
            reason,
        )
        summary = f"{html.escape(reason)}: {count} candidates in {requests} requests"
        items.append((summary, table(columns, rows)))
    columns, every = streamed(
        con,
        "SELECT request_id, tenant_id, evidence_id, document_id, reason, detail "
        "FROM {s}.exclusions ORDER BY reason, request_id, evidence_id",
    )
    download = write_csv(out_dir, "all_exclusions", columns, every)
    return Panel("exclusions", "Exclusions", intro, download + drill(items))


def _verify_note(run: AuditRun) -> str:
    """What verification decides and does not, and how to gate on it."""
    rows = html.escape(run.verification_rows)
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


def _set_note(run: AuditRun) -> str:
    """Which answer set the panel shows, and the others `--answer_set` can pick."""
    answer_set = run.answer_set
    if answer_set is None:
        return ""
    others = sorted(set(run.answer_sets) - {answer_set})
    rest = f" (others: {html.escape(', '.join(others))}; pick with --answer_set)" if others else ""
    return f", in answer set <code>{html.escape(answer_set)}</code>{rest}"


def verification_panel(run: AuditRun, figures: dict[str, ViewResult], out_dir: Path) -> Panel:
    """Verification by check, each failing check opened to its answers and sentences."""
    con = run.con
    checks = figures["verification_checks"]
    _, statuses = query(
        con, "SELECT status, COUNT(*) FROM {s}.verifications GROUP BY status ORDER BY status"
    )
    which = _set_note(run)
    intro = f"How model answers fared against their packets, check by check{which}."
    if not statuses:
        folder = html.escape(run.folder or "<the run's --output>")
        hint = (
            f"No answers verified yet. Run <code>evpack verify --answers 'results/*.jsonl' "
            f"--run {folder}</code> with the batch API's results, then this "
            "report again."
        )
        return Panel("verification", "Verification", intro, _verify_note(run), hint)
    answers = sum(n for _, n in statuses)
    body = [
        f"<p>{answers} answers: " + ", ".join(f"{n} {html.escape(s)}" for s, n in statuses),
        "</p>",
        table(checks.columns, checks.rows),
    ]
    items = []
    failing = sorted((r for r in checks.rows if r[3]), key=lambda r: (-r[3], r[0]))
    for name, _answers, _passed, failed, _skipped in failing:
        columns, rows = query(
            con,
            "SELECT v.answer_key, v.request_id, c.offending, c.sentences, c.detail "
            "FROM {s}.verifications AS v, UNNEST(v.checks) AS t(c) "
            f"WHERE c.name = ? AND c.outcome = 'fail' ORDER BY v.answer_key LIMIT {EXAMPLES}",
            name,
        )
        summary = f"{html.escape(name)}: {failed} failing answers"
        items.append((summary, table(columns, rows, "wrap")))
    columns, every = streamed(
        con,
        "SELECT v.answer_key, v.request_id, c.name AS check, c.offending, c.sentences, c.detail "
        "FROM {s}.verifications AS v, UNNEST(v.checks) AS t(c) "
        "WHERE c.outcome = 'fail' ORDER BY c.name, v.answer_key",
    )
    body += [write_csv(out_dir, "all_failing_checks", columns, every), drill(items)]
    return Panel("verification", "Verification", intro, "".join(body) + _verify_note(run))


def view_panel(figure: ViewResult, out_dir: Path) -> Panel:
    """One dashboard view: its plot when it has more than one point in time, and its rows."""
    plot = PLOTS.get(figure.view.name)
    xs = {row[figure.columns.index(plot.x)] for row in figure.rows} if plot else set()
    single_time = plot is not None and plot.x in TIME_AXES and len(xs) == 1
    flat = plot is not None and all(
        not row[figure.columns.index(y)] for row in figure.rows for y in plot.y
    )  # every bar 0 (no dead letters): an axis around nothing says less than the rows
    image = ""
    if plot is not None and figure.rows and not single_time and not flat:
        draw(figure, plot, out_dir / f"{figure.view.name}.png")
        source = html.escape(quote(f"{figure.view.name}.png"))  # a view file's name
        image = f"<img src='{source}' alt='{html.escape(figure.view.name)}'>"
    note = ""
    if single_time and plot:
        note = f"<p class=note>One {plot.x} in this run: the rows say it all.</p>"
    elif flat and figure.rows:
        note = "<p class=note>Every value is 0 in this run: the rows say it all.</p>"
    empty = None
    if not figure.rows:
        tables = ", ".join(sorted(figure.view.tables))
        empty = f"No rows: the run wrote no {html.escape(tables)} rows for this view."
        if "verifications" in figure.view.tables:
            empty += " Run <code>evpack verify</code> on this run to fill it."
    rows = ""
    if figure.rows:
        rows = table(figure.columns, figure.rows)
        rows += write_csv(out_dir, figure.view.name, figure.columns, figure.rows)
    body = image + note + rows
    return Panel(figure.view.name, figure.view.name, html.escape(figure.view.question), body, empty)
