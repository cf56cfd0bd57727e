"""The runs of a BigQuery dataset, read for the report: the newest runs' rows of each audit
table, split by run id into the runs a page reads (`audit.AuditRun`).

`evpack report --bigquery_dataset my-project.evpack --out report/` reads the tables
a batch run commits (and a streaming job inserts into) and draws the same overview
and pages as a folder of runs: there, a run is a run id. Verifications belong to
the run they checked (their `run_id`) and are shown one answer set at a time (their
`answer_set`, the newest by default), as in a folder. Rows of versions before run
ids (a null `run_id`) belong to no run and are not read.

Each table is read once, for the newest `--last_runs` runs together
(`transforms.io.run_rows`: every row validated by its model, as rows read from files
are). Rejected: the panels querying BigQuery themselves (every panel written twice, in two
SQL dialects, and the two would drift); one query per run and table (a round trip
each, dozens for a page); reading whole tables (a dataset keeps every run).
"""

from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from google.api_core.exceptions import NotFound
from google.cloud import bigquery

from pipelines.command import CommandFailed, UsageError
from pipelines.report.audit import (
    AUDIT_MODELS,
    AuditRun,
    audit_connection,
    pick_answer_set,
    record_formats,
)
from schemas.arrow import arrow_schema
from schemas.run import RunRecord
from transforms.io.bigquery import bigquery_client
from transforms.io.reachability import dataset_problem
from transforms.io.run_rows import InvalidAuditRow, run_rows
from transforms.io.table_commit import RUN_ID

RUN_TABLES = ("manifests", "runs")
"""The tables whose run ids are the dataset's runs: a run packed requests (manifests), or
committed with none (its run record)."""

TIMEOUT_SECONDS = 60
"""How long the dataset may stay unreachable before the report gives up, by default."""


def dataset_runs(
    dataset: str, answer_set: str | None, last_runs: int, timeout_seconds: float = TIMEOUT_SECONDS
) -> list[AuditRun]:
    """The newest `last_runs` runs of `dataset` (project.dataset), newest first, each
    showing `answer_set` (default: its newest). A dataset that cannot be read within
    `timeout_seconds` exits 1 naming why; one with no runs, or without `answer_set`, 2."""
    problem = dataset_problem(dataset, timeout_seconds, False, "timeout_seconds")
    if problem:
        raise CommandFailed(problem)
    client = bigquery_client(dataset.split(".")[0])
    try:
        run_ids = newest_run_ids(client, dataset, last_runs, timeout_seconds)
        if not run_ids:
            raise UsageError(
                f"--bigquery_dataset {dataset} holds no run (no run id in "
                f"{' or '.join(RUN_TABLES)}); a batch run with --bigquery_dataset writes them"
            )
        tables = {
            name: _read(client, dataset, name, run_ids, timeout_seconds) for name in AUDIT_MODELS
        }
    finally:
        client.close()
    sets = _answer_sets(tables["verifications"])
    if answer_set is not None and not any(answer_set in found for found in sets.values()):
        names = ", ".join(sorted(set().union(*sets.values()))) or "none"
        raise UsageError(
            f"--answer_set {answer_set!r} is not among the answer sets of the newest "
            f"{len(run_ids)} runs of {dataset}: {names}"
        )
    return [_run(dataset, run_id, tables, sets.get(run_id, {}), answer_set) for run_id in run_ids]


def newest_run_ids(
    client: bigquery.Client, dataset: str, last_runs: int, timeout_seconds: float
) -> list[str]:
    """The ids of the dataset's newest runs, newest first (a run id begins with its UTC
    start, `schemas.run.new_run_id`, so the order of the ids is the order of the runs)."""
    found: set[str] = set()
    for table in RUN_TABLES:
        sql = f"SELECT DISTINCT run_id FROM `{dataset}.{table}` WHERE run_id IS NOT NULL"
        found.update(row["run_id"] for row in _query(client, sql, timeout_seconds))
    return sorted((r for r in found if RUN_ID.match(r)), reverse=True)[:last_runs]


def _query(client: bigquery.Client, sql: str, timeout_seconds: float) -> Iterable[Any]:
    """The rows of `sql`; none when its table does not exist (a run that wrote no such rows
    in a dataset made before the table was)."""
    try:
        return client.query(sql, timeout=timeout_seconds).result(timeout=timeout_seconds)
    except NotFound:
        return []


def _read(
    client: bigquery.Client, dataset: str, table: str, run_ids: list[str], timeout_seconds: float
) -> pa.Table:
    """The rows of `table` that belong to `run_ids` (`transforms.io.run_rows`), as Arrow in
    the model's derived schema; a row the model refuses stops the report, naming the table."""
    try:
        rows = [
            row.model_dump() for row in run_rows(client, dataset, table, run_ids, timeout_seconds)
        ]
    except InvalidAuditRow as err:
        raise CommandFailed(str(err)) from err
    return pa.Table.from_pylist(rows, schema=arrow_schema(AUDIT_MODELS[table]))


def _answer_sets(verifications: pa.Table) -> dict[str, dict[str, Any]]:
    """For each run id, its answer sets, each with when its newest answer was verified."""
    sets: dict[str, dict[str, Any]] = {}
    for row in verifications.select(["run_id", "answer_set", "verified_at"]).to_pylist():
        run_id, name, at = row["run_id"], row["answer_set"], row["verified_at"]
        if run_id and name:
            run = sets.setdefault(run_id, {})
            run[name] = max(run.get(name, at), at)
    return sets


def _run(
    dataset: str,
    run_id: str,
    tables: dict[str, pa.Table],
    sets: dict[str, Any],
    wanted: str | None,
) -> AuditRun:
    """One run's rows of every table, its verifications of one answer set."""
    chosen = pick_answer_set(sets, wanted)
    own = {name: _of_run(table, run_id) for name, table in tables.items()}
    if chosen is not None:
        rows = own["verifications"]
        own["verifications"] = rows.filter(pc.equal(rows["answer_set"], chosen))
    elif wanted is not None:  # another run has it: this one shows no answers
        own["verifications"] = own["verifications"].slice(0, 0)
    records = tuple(RunRecord.model_validate(r) for r in own["runs"].to_pylist())
    return AuditRun(
        where=f"{dataset}, run {run_id}",
        run_id=run_id,
        con=audit_connection(own),
        records=records,
        prompt_format=record_formats(records) or None,
        answer_set=chosen,
        answer_sets=tuple(sorted(sets)),
        folder=None,
        verification_rows=f"`{dataset}.verifications` WHERE run_id = '{run_id}'",
    )


def _of_run(table: pa.Table, run_id: str) -> pa.Table:
    return table.filter(pc.equal(table["run_id"], run_id))
