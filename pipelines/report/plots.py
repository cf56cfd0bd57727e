"""Drawing a run's views and distributions as PNGs (matplotlib, files only).

Labels come from the run's rows (tenant ids, reasons, builder versions), so
they are anyone's text: matplotlib's math markup is off while drawing (a
tenant `acme_$5_to_$10` is text, not a formula that fails to parse), and
`plot_text` makes each label safe to show (see there). Rejected: escaping `$`
alone, which leaves the other ways matplotlib reads a label (a leading `_`
hides it from the legend).
"""

import math
import warnings
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import duckdb
import matplotlib

from pipelines.report.audit import ViewResult, query
from pipelines.report.markup import category

matplotlib.use("Agg")  # files only, no display
from matplotlib import pyplot as plt  # after choosing the backend

PLAIN_TEXT = {"text.parse_math": False, "text.usetex": False}
"""Every text drawn is taken as written (set around each drawing, not for the process)."""
LABEL_CHARS = 60
"""A label longer than this is cut (with `…`): an axis of long ids says nothing."""


def plot_text(value: object) -> str:
    """A value as a label matplotlib shows as written: control and format characters as
    escapes (`markup.category`), cut to `LABEL_CHARS`, and a leading `_` kept visible
    (matplotlib leaves a label starting with `_` out of the legend). Values are told
    apart before they are cut: two long ids sharing a start stay two bars."""
    text = category(value)
    if len(text) > LABEL_CHARS:
        text = text[: LABEL_CHARS - 1] + "…"
    return f" {text}" if text.startswith("_") else text


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


def draw(figure: ViewResult, plot: Plot, path: Path) -> None:
    """Draw one view as a PNG at `path`."""
    with plt.rc_context(PLAIN_TEXT), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Glyph .* missing from font")  # drawn as a box
        _draw(figure, plot, path)


def _draw(figure: ViewResult, plot: Plot, path: Path) -> None:
    index = {name: i for i, name in enumerate(figure.columns)}
    xs: list[str] = []
    values: dict[tuple[str, str], float] = defaultdict(float)
    for row in figure.rows:
        x = category(row[index[plot.x]])
        if x not in xs:
            xs.append(x)
        group = category(row[index[plot.series]]) if plot.series else ""
        for y in plot.y:
            label = (f"{group} {y}" if group else y) if len(plot.y) > 1 else group
            values[(label, x)] += float(row[index[y]] or 0)
    labels = list(dict.fromkeys(label for label, _ in values))
    fig, ax = plt.subplots(figsize=(8, 3.6), dpi=100)
    positions = list(range(len(xs)))
    if plot.kind == "lines":
        colors: dict[str, str] = {}
        for label in labels:
            group = label.rsplit(" ", 1)[0]
            color = colors.setdefault(group, f"C{len(colors) % 10}")
            style = "--" if len(plot.y) > 1 and label.endswith(plot.y[-1]) else "-"
            heights = [values.get((label, x), math.nan) for x in xs]  # gaps where no requests
            ax.plot(positions, heights, style, color=color, marker="o", label=plot_text(label))
    elif plot.kind == "stacked":
        bottom = [0.0] * len(xs)
        palette = plt.get_cmap("tab20")  # up to 20 reasons, each its own color
        for k, label in enumerate(labels):
            heights = [values.get((label, x), 0.0) for x in xs]
            shown = plot_text(label) or None
            ax.bar(positions, heights, bottom=bottom, label=shown, color=palette(k % 20))
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    else:
        width = 0.8 / max(len(labels), 1)
        for k, label in enumerate(labels):
            offsets = [p - 0.4 + width * (k + 0.5) for p in positions]
            heights = [values.get((label, x), math.nan) for x in xs]
            ax.bar(offsets, heights, width, label=plot_text(label) or None)
    ax.set_xticks(positions, [plot_text(x) for x in xs])
    ax.set_xlabel(plot_text(plot.x))
    ax.set_ylabel(plot_text(plot.ylabel))
    ax.set_title(plot_text(figure.view.name))
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
    with plt.rc_context(PLAIN_TEXT):
        return _draw_histograms(con, path)


def _draw_histograms(con: duckdb.DuckDBPyConnection, path: Path) -> dict[str, tuple[float, ...]]:
    fig, axes = plt.subplots(2, 2, figsize=(9, 5.4), dpi=100)
    summary = {}
    for ax, (name, (sql, label)) in zip(axes.flat, HISTOGRAMS.items(), strict=True):
        _, rows = query(con, f"SELECT {sql} FROM {{s}}.manifests WHERE {sql} IS NOT NULL")
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


def draw_trend(
    runs: list[str],
    figures: dict[str, list[float | None]],
    path: Path,
    lines: dict[str, list[str]] | None = None,
) -> None:
    """Headline figures across runs, oldest first, one small chart each (a run without a
    figure, e.g. no answers verified, is a gap); a figure in `lines` is drawn one line per
    label its runs carry (a pass rate per answer set), with a legend."""
    with plt.rc_context(PLAIN_TEXT), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Glyph .* missing from font")
        fig, axes = plt.subplots(2, 2, figsize=(9, 5.4), dpi=100, sharex=True)
        positions = list(range(len(runs)))
        for ax, (name, values) in zip(axes.flat, figures.items(), strict=True):
            ax.set_title(plot_text(name), fontsize="medium")
            if all(v is None for v in values):  # no empty axes: say there is nothing
                ax.text(0.5, 0.5, "none in these runs", ha="center", transform=ax.transAxes)
                ax.set_yticks([])
                continue
            labels = (lines or {}).get(name, [""] * len(values))
            for n, label in enumerate(sorted(set(labels))):
                ys = [
                    math.nan if v is None or mine != label else float(v)
                    for v, mine in zip(values, labels, strict=True)
                ]
                ax.plot(positions, ys, "-o", color=f"C{n % 10}", label=plot_text(label) or None)
            if len(set(labels)) > 1:
                ax.legend(fontsize="small")
            ax.set_ylim(bottom=0)
        for ax in axes[-1]:
            ax.set_xticks(positions, [plot_text(r) for r in runs])
            ax.tick_params(axis="x", labelrotation=20)
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)
