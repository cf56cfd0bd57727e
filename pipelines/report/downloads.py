"""Every drill-down's rows as a CSV file beside the page, so nothing is cut at the examples.

The page shows a few example rows under each reason, error and failing check, and a
view's first `markup.MAX_TABLE_ROWS` rows; the CSV holds all of them, for a spreadsheet
or a script. Values are the run's own text, so a cell a spreadsheet would run as a
formula (starting `=`, `+`, `-`, `@`, a tab or a carriage return) is written with a
leading `'`, which spreadsheets read as "text". A drill-down's rows stream from its
query into the file (`audit.streamed`), never held as one list: a large run's
exclusions are most of its rows. Rejected: paging inside the page (a script, and a
static page is what opens offline and attaches to a ticket).
"""

import csv
import html
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    if isinstance(value, list):
        return "; ".join(str(v) for v in value)
    return value


def write_csv(
    out_dir: Path, name: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> str:
    """Write `<name>.csv` into `out_dir`, row by row, and return the link to it for the
    page."""
    path = out_dir / f"{name}.csv"
    count = 0
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_cell(v) for v in row])
            count += 1
    href = html.escape(quote(path.name))
    return f"<p class=note><a href='{href}'>All {count} rows (CSV)</a></p>"
