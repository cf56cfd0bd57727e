"""The page's HTML pieces: panels, tables, drill-downs, and its style and script.

Plain strings, every value escaped where it is written; no template engine
(one more dependency for a page of a few elements).
"""

import html
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from packer.parsing.strict_json import printable

MAX_TABLE_ROWS = 200


def category(value: Any) -> str:
    """A value as a label or table text: times to the minute, None as `(none)`, other
    characters than text's as escapes (`strict_json.printable`: run data is anyone's)."""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, date):
        return value.isoformat()
    return "(none)" if value is None else printable(str(value))


@dataclass(frozen=True)
class Panel:
    """One section of the page; `empty` is how to fill it when the run gave it no data."""

    key: str
    title: str
    intro: str
    body: str
    empty: str | None = None


def cell(value: Any) -> str:
    """One table cell: numbers right-aligned, whole floats as integers."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        if isinstance(value, list):
            return f"<td>{html.escape('; '.join(category(v) for v in value))}</td>"
        return f"<td>{html.escape(category(value))}</td>"
    if isinstance(value, float) and not value.is_integer():
        return f"<td class=n>{value:.3f}</td>"
    return f"<td class=n>{int(value)}</td>"


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]], cls: str = "") -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(cell(v) for v in row) + "</tr>" for row in rows[:MAX_TABLE_ROWS]
    )
    more = len(rows) - MAX_TABLE_ROWS
    note = f"<p class=note>{more} more rows not shown.</p>" if more > 0 else ""
    return f"<table class='{cls}'><tr>{head}</tr>{body}</table>{note}"


def pairs_table(pairs: Sequence[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><th>{html.escape(k)}</th>{cell(v)}</tr>" for k, v in pairs)
    return f"<table class=pairs>{rows}</table>"


def drill(items: Sequence[tuple[str, str]]) -> str:
    """(summary, body) pairs as drill-downs, the first one open so the page shows an example."""
    return "".join(
        f"<details{' open' if k == 0 else ''}><summary>{summary}</summary>{body}</details>"
        for k, (summary, body) in enumerate(items)
    )


def excerpt(text: str | None, limit: int = 240) -> str:
    if text is None:
        return ""
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def render(panel: Panel) -> str:
    filled = panel.empty is None
    content = panel.body if filled else f"{panel.body}<p class=empty>{panel.empty}</p>"
    return (
        f"<section class=panel id='{html.escape(panel.key)}' "
        f"data-empty='{'no' if filled else 'yes'}'><h2>{html.escape(panel.title)}</h2>"
        f"<p class=intro>{panel.intro}</p>{content}</section>"
    )


STYLE = (
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

SCRIPT = (
    "addEventListener('load',function(){var bad=[];"
    "document.querySelectorAll('img').forEach(function(i){"
    "if(!i.complete||!i.naturalWidth){bad.push(i.getAttribute('src'));"
    "i.insertAdjacentHTML('afterend','<p class=empty>Image missing: '+i.getAttribute('src')"
    "+' (keep the PNGs beside index.html)</p>');}});"
    "document.body.dataset.images=bad.length?'missing':'ok';"
    "if(bad.length)console.error('report images missing: '+bad.join(', '));});"
)
"""Says in the page, and on the console for its test, when a PNG beside it is missing."""
