"""Dashboard views: one SQL source for BigQuery and for the local report.

Each view is a BigQuery SQL file in `pipelines/dashboard_views/` (package data,
so an installed package has them) whose leading comment says
which question it answers. A view reads an audit table as `${manifests}`,
`${exclusions}`, ... : the table's current rows (`CURRENT_ROWS`), then
`${dataset}` is replaced by `project.dataset`; the local report gets the same
query transpiled to DuckDB, so a dashboard and a report can never disagree on
what a figure means. The one deliberate difference: DuckDB computes exact
quantiles where BigQuery uses `APPROX_QUANTILES` (the approximation only pays
off at warehouse scale).

Current rows count each request once. A rerun of a batch job replaces its
earlier run's rows (`transforms.io.table_commit`), but two jobs may pack the
same request (a rerun under another `--output`, a batch beside a stream), and
rows of versions before run ids may be doubled: of each request only the rows
of its latest run (run ids sort by start) are read, and of a manifest one row.
Rejected: reading only the latest committed run of each job through the
`runs` table (streaming runs have no run record, and two jobs packing the same
request would still count it twice); a filtered view per table that the
dashboards read (BigQuery and the report would then need the views created in
order, and the report reads tables, not views).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from string import Template

import sqlglot
from google.api_core.exceptions import Conflict
from google.cloud import bigquery
from sqlglot import exp

from schemas.bigquery import bigquery_schema
from schemas.tables import OUTPUTS

VIEWS_DIR: Traversable = files("pipelines") / "dashboard_views"
"""The view files as installed with the package (read through importlib.resources,
not a path into a source checkout, so `pip install .` runs the report too)."""


def _current(table: str, qualify: str, name: str | None = None) -> str:
    """The rows of `table` that `qualify` keeps, as a subquery named `name` (by default as
    the table)."""
    columns = ", ".join(f["name"] for f in bigquery_schema(OUTPUTS[table].model))
    rows = f"SELECT {columns} FROM `${{dataset}}.{table}` WHERE TRUE QUALIFY {qualify}"
    return f"({rows}) AS {name or table}"


def _each_run(table: str, key: str) -> str:
    """The rows of `table` of every run, one per run and `key`: a run's history, where
    `CURRENT_ROWS` keeps only each request's latest run."""
    partition = f"ROW_NUMBER() OVER (PARTITION BY run_id, {key}) = 1"
    return _current(table, f"run_id IS NOT NULL AND {partition}", f"run_{table}")


def _latest_run(table: str, key: str) -> str:
    """The rows of `table` that the latest run of each `key` wrote (NULL: before run ids)."""
    run = "COALESCE(run_id, '')"
    return _current(table, f"{run} = MAX({run}) OVER (PARTITION BY {key})")


CURRENT_ROWS: dict[str, str] = {
    "manifests": _current(
        "manifests",
        "ROW_NUMBER() OVER (PARTITION BY request_id ORDER BY COALESCE(run_id, '') DESC) = 1",
    ),
    "exclusions": _latest_run("exclusions", "request_id"),
    "dead_letters": _latest_run("dead_letters", "source, payload"),
    "verifications": _latest_run("verifications", "request_id"),
    "runs": _current("runs", "ROW_NUMBER() OVER (PARTITION BY run_id) = 1"),
    "run_manifests": _each_run("manifests", "request_id"),
    "run_verifications": _each_run("verifications", "answer_set, answer_key"),
}
"""What `${<table>}` reads in a view: the table's rows that count, each request once (a
manifest per request, the other rows of its latest run; a dead letter is one input
record by its source and payload), named as the table; a run record once; and, for a
job's history, `${run_<table>}`: the rows of every run, each request once per run. Its
columns are listed (the emulator
resolves a record column's field, `budget.used`, only so). `WHERE TRUE`: BigQuery has
taken QUALIFY only beside a WHERE, GROUP BY or HAVING."""


@dataclass(frozen=True)
class View:
    """One dashboard view: its name (the file stem), its question and its query."""

    name: str
    question: str
    sql: str

    def _over(self, dataset: str) -> str:
        """The query over the current rows of `dataset`'s tables."""
        current = Template(self.sql).substitute(CURRENT_ROWS)
        return Template(current).substitute(dataset=dataset)

    def bigquery_sql(self, dataset: str) -> str:
        """The query for BigQuery; `dataset` is `project.dataset`."""
        if dataset.count(".") != 1:
            raise ValueError(f"dataset must be 'project.dataset', got {dataset!r}")
        return self._over(dataset)

    @property
    def tables(self) -> frozenset[str]:
        """The audit tables the view reads."""
        tree = sqlglot.parse_one(self._over("project.dataset"), read="bigquery")
        return frozenset(t.name for t in tree.find_all(exp.Table) if t.db == "dataset")

    def duckdb_sql(self, schema: str) -> str:
        """The same query in DuckDB's dialect over tables of `schema`, with exact quantiles."""
        tree = sqlglot.parse_one(self._over(schema), read="bigquery")
        duck = sqlglot.parse_one(tree.sql(dialect="duckdb", comments=False), read="duckdb")
        return duck.transform(_exact_quantile).sql(dialect="duckdb")


def _exact_quantile(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.ApproxQuantile):
        return exp.Anonymous(this="QUANTILE_DISC", expressions=[node.this, node.args["quantile"]])
    return node


def _question(sql: str) -> str:
    """The leading `--` comment block, joined into one paragraph."""
    lines = []
    for line in sql.splitlines():
        if not line.startswith("--"):
            break
        lines.append(line.removeprefix("--").strip())
    return " ".join(lines)


def load_views(directory: Traversable = VIEWS_DIR) -> tuple[View, ...]:
    """Every `*.sql` view of `directory` (a `Path` or package resource), sorted by name;
    each must state its question."""
    if not directory.is_dir():
        raise ValueError(f"no view files (*.sql) in {directory}: not a directory")
    paths = sorted(
        (p for p in directory.iterdir() if p.name.endswith(".sql")), key=lambda p: p.name
    )
    if not paths:
        raise ValueError(f"no view files (*.sql) in {directory}")
    views = []
    for path in paths:
        sql = path.read_text(encoding="utf-8")
        question = _question(sql)
        if not question.startswith("Question:"):
            raise ValueError(f"{path} must open with a '-- Question: ...' comment")
        question = question.removeprefix("Question:").strip()
        name = path.name.removesuffix(".sql")
        views.append(View(name=name, question=question[:1].upper() + question[1:], sql=sql))
    return tuple(views)


@dataclass(frozen=True)
class CreatedViews:
    """What `create_views` did: the views made or updated, and those it could not make."""

    created: list[str]
    skipped: dict[str, list[str]]
    """View name -> the audit tables it reads that the dataset lacks."""


def create_views(
    client: bigquery.Client, dataset: str, views: Sequence[View] | None = None
) -> CreatedViews:
    """Create the views in `dataset`, or update their query.

    `dataset` is `project.dataset` or a dataset id in the client's project.
    BigQuery refuses a view over a missing table, so a view whose tables are
    not all in the dataset is skipped and reported, never silently dropped.
    """
    qualified = dataset if "." in dataset else f"{client.project}.{dataset}"
    present = {t.table_id for t in client.list_tables(qualified)}
    result = CreatedViews(created=[], skipped={})
    for view in load_views() if views is None else views:
        missing = sorted(view.tables - present)
        if missing:
            result.skipped[view.name] = missing
            continue
        table = bigquery.Table(f"{qualified}.{view.name}")
        table.view_query = view.bigquery_sql(qualified)
        table.description = view.question
        try:
            client.create_table(table)
        except Conflict:
            client.update_table(table, ["view_query", "description"])
        result.created.append(f"{qualified}.{view.name}")
    return result
