"""A batch run's audit rows in BigQuery exactly once: staged in tables of their own, then
committed in one multi-statement transaction that replaces the earlier run of its job and
key.

A batch run with `--bigquery_dataset` inserts its rows into staging tables
`<dataset>.staging_<run>_<table>` (created at start with the audit tables' schemas,
expiring after `STAGING_DAYS`), which no view reads. Once the pipeline has
finished and every check that could fail the run has passed, `commit_tables`
adds the run record to the staging `runs` table and runs one script:

    BEGIN TRANSACTION;
    -- refuse if the committed runs of the job and key are not those found at start
    DELETE the rows of their earlier run from every audit table, and its run record;
    INSERT every staged row (each row once by its key) and the new run record;
    COMMIT TRANSACTION;

then drops the staging tables. Real BigQuery runs such a script atomically
(snapshot isolation; a concurrent transaction on the same tables makes one of
them fail, never both half-applied), and the emulator here (bqemulator on
DuckDB) rolls the same script back on an error inside it (tested). A failed
run drops its staging tables and commits nothing; a killed one leaves only its
staging tables, invisible to the views, which expire.

A run's identity is its `job` and its `run_key`, both of the run record:
`--audit_job` and `--run_key`, each by default the run's `--output` as an
absolute path (the place the batch job already holds its lock and stages its
files, so two runs of one identity never overlap). A nightly job
(`--audit_job=nightly`) into a folder per night keeps every night; into one
folder, it passes the night as `--run_key`. A rerun finding committed rows of
its job and key is refused unless `--overwrite`, which replaces those rows
only. A record from before keys (`run_key` null) is keyed by its job: the
default job was its output, so a rerun of it still finds it. Rejected: the job
alone as identity (a named job then kept one night: its history was lost at
each overwrite), and a key made of the date of the run (a rerun of last night
the next morning would replace the wrong night).

No user string goes into the script: it names tables (the dataset the flags
checked) and run ids (checked against `RUN_ID`); the job and key are joined
from the staged run record, because the emulator takes no query parameters in
a script.

Rejected: inserting straight into the audit tables and marking the run
committed in `runs`, with the views reading only committed runs (a failed or
killed run's rows stay in the tables, and any query but the views counts
them); load jobs from the staged Parquet files at commit (each load is atomic
alone, but replacing the earlier run takes a DELETE besides, so a transaction
is needed anyway, and the emulator's load jobs do not read local files);
`WRITE_TRUNCATE` per table (it would drop every other job's rows); DELETE
then INSERT without a transaction (a failure between them loses both runs).
Real BigQuery refuses DML over rows still in a streaming buffer: the audit
tables are only written by these DML statements in batch, so a rerun's DELETE
meets none, but a streaming job inserting into the same dataset may make the
commit fail (exit 1, nothing changed): give batch and streaming jobs
separate datasets.
"""

import datetime
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass

from google.api_core.exceptions import NotFound
from google.cloud import bigquery

from schemas.bigquery import bigquery_schema
from schemas.run import RunRecord
from schemas.tables import AUDIT_TABLES, OUTPUTS
from transforms.io.bigquery import bigquery_client, table_definition, to_bigquery_row

_LOG = logging.getLogger(__name__)

RUN_ID = re.compile(r"^[0-9A-Za-z_-]{1,64}$")
"""What a run id may hold before it is written into SQL (`schemas.run.new_run_id` makes
`20261203T102000-1a2b3c4d`)."""

STAGING_DAYS = 7
"""A killed run's staging tables expire after this many days (real BigQuery drops them)."""

RUN_TABLES = ("manifests", "exclusions", "exclusion_counts", "dead_letters", "runs")
"""The tables a batch run commits: its audit rows and its run record."""

ROW_KEYS: dict[str, tuple[str, ...]] = {
    "manifests": ("request_id",),
    "exclusions": ("request_id", "evidence_id"),
    "exclusion_counts": ("tenant_id", "reason"),
}
"""What makes a staged row one row: a bundle the runner retried may have inserted it twice
(insertIds are best effort), so the commit takes one row per key. Dead letters have no
key (two equal bad lines are two dead letters). `WHERE TRUE`: BigQuery has taken
QUALIFY only beside a WHERE, GROUP BY or HAVING."""


KEY_OF = "COALESCE(r.run_key, r.job)"
"""The key of a committed run `r`: a record from before keys is keyed by its job."""


class RerunRefused(ValueError):
    """The job and key already have committed rows in the dataset and `--overwrite` was not
    given."""


def staging_prefix(run_id: str) -> str:
    """The prefix of run `run_id`'s staging tables (letters, digits and `_` only)."""
    if not RUN_ID.match(run_id):
        raise ValueError(f"not a run id: {run_id!r}")
    return f"staging_{run_id.replace('-', '_')}_"


@dataclass(frozen=True)
class TableRun:
    """Where one batch run's audit rows go in BigQuery: its job and key, and its staging
    tables."""

    dataset: str
    """`project.dataset`."""
    job: str
    key: str
    run_id: str

    @property
    def prefix(self) -> str:
        return staging_prefix(self.run_id)

    def staged(self, name: str) -> str:
        """The staging table of audit table `name`."""
        return f"{self.dataset}.{self.prefix}{name}"

    def final(self, name: str) -> str:
        return f"{self.dataset}.{name}"


def rerun_refusal(run: TableRun, earlier: list[str], overwrite: bool) -> str | None:
    """Why the run may not start (None: it may): its job and key have committed runs and it
    was not told to replace them."""
    if not earlier or overwrite:
        return None
    return (
        f"--bigquery_dataset {run.dataset} already holds the rows of run {earlier[-1]} of "
        f"job {run.job!r}, key {run.key!r}; pass --overwrite to replace them, or name "
        "another --run_key or --audit_job"
    )


def _columns(name: str) -> str:
    return ", ".join(f["name"] for f in bigquery_schema(OUTPUTS[name].model))


def _staged_rows(run: TableRun, name: str) -> str:
    """The SELECT of a staging table's rows, one per `ROW_KEYS` key."""
    select = f"SELECT {_columns(name)} FROM `{run.staged(name)}` WHERE TRUE"
    keys = ROW_KEYS.get(name)
    if keys is None:
        return select
    return f"{select} QUALIFY ROW_NUMBER() OVER (PARTITION BY {', '.join(keys)}) = 1"


def commit_script(run: TableRun, earlier: Iterable[str]) -> str:
    """The one transaction that replaces the runs `earlier` of the job and key (those found at
    start) by this run's staged rows; it fails, changing nothing, if the committed runs of
    the job and key are others by then."""
    found = sorted(earlier)
    for run_id in (run.run_id, *found):
        staging_prefix(run_id)  # checked: ids are written into the SQL
    runs, staged_runs = f"`{run.final('runs')}`", f"`{run.staged('runs')}`"
    job_runs = (
        f"SELECT r.run_id FROM {runs} AS r JOIN {staged_runs} AS s "
        f"ON r.job = s.job AND {KEY_OF} = s.run_key"
    )
    expected = ", ".join(f"'{run_id}'" for run_id in found) or "''"
    statements = [
        "BEGIN TRANSACTION",
        f"SELECT IF((SELECT COUNT(*) FROM ({job_runs}) WHERE run_id NOT IN ({expected})) > 0, "
        f"ERROR('another run of this job committed since run {run.run_id} started'), 0)",
    ]
    statements += [
        f"DELETE FROM `{run.final(name)}` WHERE run_id IN ({job_runs})"
        for name in RUN_TABLES
        if name != "runs"
    ]
    statements.append(f"DELETE FROM {runs} WHERE run_id IN ({job_runs})")
    statements += [
        f"INSERT INTO `{run.final(name)}` ({_columns(name)}) {_staged_rows(run, name)}"
        for name in RUN_TABLES
    ]
    statements.append("COMMIT TRANSACTION")
    return ";\n".join(statements) + ";"


def _client(run: TableRun) -> bigquery.Client:
    return bigquery_client(run.dataset.split(".")[0])


def earlier_runs(run: TableRun) -> list[str]:
    """The committed runs of the run's job and key, oldest first (one, unless rows predate
    this)."""
    client = _client(run)
    try:
        config = bigquery.QueryJobConfig(
            query_parameters=[
                bigquery.ScalarQueryParameter("job", "STRING", run.job),
                bigquery.ScalarQueryParameter("key", "STRING", run.key),
            ]
        )
        sql = (
            f"SELECT run_id FROM `{run.final('runs')}` AS r "
            f"WHERE r.job = @job AND {KEY_OF} = @key ORDER BY run_id"
        )
        return [row["run_id"] for row in client.query(sql, job_config=config).result()]
    except NotFound as err:
        raise ValueError(
            f"{run.dataset} has no table runs, which a batch run commits its record to: run "
            f"`evpack tables --dataset {run.dataset}` once, or leave --create_tables=false out"
        ) from err
    finally:
        client.close()


def check_rerun(run: TableRun, overwrite: bool) -> list[str]:
    """The committed runs of the job and key, which this run will replace; raises
    `RerunRefused` unless `overwrite` when there are some."""
    earlier = earlier_runs(run)
    refusal = rerun_refusal(run, earlier, overwrite)
    if refusal is not None:
        raise RerunRefused(refusal)
    return earlier


def create_staging(run: TableRun) -> None:
    """The run's empty staging tables, with the audit tables' schemas, expiring in
    `STAGING_DAYS` (so a killed run's are dropped by BigQuery)."""
    client = _client(run)
    expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=STAGING_DAYS)
    try:
        for name in RUN_TABLES:
            table = table_definition(run.staged(name), AUDIT_TABLES[name])
            table.expires = expires
            client.create_table(table, exists_ok=True)
    finally:
        client.close()


def drop_staging(run: TableRun) -> None:
    """Drop the run's staging tables (done with, committed or not)."""
    client = _client(run)
    try:
        for name in RUN_TABLES:
            client.delete_table(run.staged(name), not_found_ok=True)
    finally:
        client.close()


def describe(run: TableRun, earlier: list[str]) -> str:
    """What the commit did, for the run summary."""
    replaced = f", replacing run {', '.join(earlier)}" if earlier else ""
    key = "" if run.key == run.job else f", key {run.key!r}"
    return f"{run.dataset}: run {run.run_id} of job {run.job!r}{key}{replaced}"


def commit_tables(run: TableRun, record: RunRecord, earlier: list[str]) -> None:
    """Commit the staged rows and `record` in one transaction (`commit_script`), replacing
    the runs `earlier` of the job and key; then drop the staging tables. Raises, committing nothing,
    when BigQuery refuses the transaction (the staging tables are then kept)."""
    client = _client(run)
    try:
        errors = client.insert_rows_json(run.staged("runs"), [to_bigquery_row(record)])
        if errors:
            raise RuntimeError(f"the run record could not be staged: {errors}")
        client.query(commit_script(run, earlier)).result()
    finally:
        client.close()
    _LOG.info("committed run %s of job %r into %s", run.run_id, run.job, run.dataset)
    drop_staging(run)
