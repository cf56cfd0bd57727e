"""Dashboard views: one SQL source for BigQuery and for the local report.

Each view is a BigQuery SQL file in `pipelines/dashboard_views/` (package data,
so an installed package has them) whose leading comment says
which question it answers. BigQuery gets the file with `${dataset}` replaced by
`project.dataset`; the local report gets the same query transpiled to DuckDB,
so a dashboard and a report can never disagree on what a figure means. The one
deliberate difference: DuckDB computes exact quantiles where BigQuery uses
`APPROX_QUANTILES` (the approximation only pays off at warehouse scale).
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

VIEWS_DIR: Traversable = files("pipelines") / "dashboard_views"
"""The view files as installed with the package (read through importlib.resources,
not a path into a source checkout, so `pip install .` runs the report too)."""


@dataclass(frozen=True)
class View:
    """One dashboard view: its name (the file stem), its question and its query."""

    name: str
    question: str
    sql: str

    def bigquery_sql(self, dataset: str) -> str:
        """The query for BigQuery; `dataset` is `project.dataset`."""
        if dataset.count(".") != 1:
            raise ValueError(f"dataset must be 'project.dataset', got {dataset!r}")
        return Template(self.sql).substitute(dataset=dataset)

    @property
    def tables(self) -> frozenset[str]:
        """The audit tables the view reads."""
        sql = Template(self.sql).substitute(dataset="project.dataset")
        tree = sqlglot.parse_one(sql, read="bigquery")
        return frozenset(t.name for t in tree.find_all(exp.Table) if t.db == "dataset")

    def duckdb_sql(self, schema: str) -> str:
        """The same query in DuckDB's dialect over tables of `schema`, with exact quantiles."""
        tree = sqlglot.parse_one(Template(self.sql).substitute(dataset=schema), read="bigquery")
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
