"""A finished batch run's last steps, in order: decide whether it failed, commit its
files, then its BigQuery rows (`pipelines.batch.run` calls them).

Every condition that makes `evpack batch` exit 1 is decided before the first file
moves and before any BigQuery commit, so a failed `--overwrite` rerun leaves the
earlier run whole. The files commit first: a BigQuery commit that fails after it
leaves the tables as they were and says so (rerunning with `--overwrite` makes
both agree again); the other order would leave rows whose files never came.
Rejected: deciding the gates after the commit (the earlier run was already
replaced by the time the run said it failed).
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from apache_beam.io.filesystems import FileSystems

from pipelines.command import CommandFailed
from pipelines.options.jobs import Settings
from pipelines.summary import RunSummary
from schemas.run import RunRecord
from schemas.tables import BATCH_FILE_TYPES
from transforms.delivery import DeliveryReport, deliver_outbox
from transforms.io.bigquery import create_audit_tables
from transforms.io.bounded import Bound, SinkRefused, SinkTimeout, Step, unbounded, watch
from transforms.io.reachability import dataset_problem
from transforms.io.table_commit import (
    TableRun,
    check_rerun,
    commit_tables,
    create_staging,
    describe,
)
from transforms.record_files import matching_files
from transforms.sinks import audit_sink
from transforms.staging import LOCK, commit

_LOG = logging.getLogger(__name__)


T = TypeVar("T")


class RunFailed(CommandFailed):
    """The run failed after it started writing (the pipeline, a gate or a commit); the
    message says what it left behind, and `summary`, when the pipeline finished, what it
    did."""

    def __init__(self, message: str, summary: RunSummary | None = None) -> None:
        super().__init__(message)
        self.summary = summary


def ready_tables(settings: Settings) -> None:
    """With `--create_tables`, the dataset and audit tables, created or brought up to date."""
    if settings.create_tables:
        create_audit_tables(settings.sinks.dataset)


def table_run(settings: Settings) -> TableRun | None:
    """Where this run stages and commits its audit rows in BigQuery (None: as files)."""
    if settings.sinks.dataset is None or audit_sink(settings.sinks) == "files":
        return None
    return TableRun(settings.sinks.dataset, settings.job, settings.run_key, settings.run_id)


def prepare_tables(settings: Settings, tables: TableRun | None, overwrite: bool) -> list[str]:
    """Before the pipeline: the audit tables ready, the earlier run of its job and key
    (refused unless `overwrite`, `RerunRefused`), and this run's staging tables; returns
    the runs the commit replaces."""
    ready_tables(settings)
    if tables is None:
        return []
    earlier = check_rerun(tables, overwrite)
    create_staging(tables)
    return earlier


def decide_failure(
    staged: RunSummary, max_dead_letter_percent: float, staging: str, tables: TableRun | None
) -> None:
    """Raise `RunFailed` when the finished run must exit 1 (no prompt made, dead letters
    over `--max_dead_letter_percent`); `staged` summarizes it in its folder `staging`.

    Decided from the finished pipeline's counts before anything is committed, so a failed
    `--overwrite` rerun leaves the earlier run whole. Rejected: deciding after the commit
    (the earlier run was already replaced by the time the run said it failed)."""
    failure = staged.hopeless(max_dead_letter_percent)
    if failure is None:
        return
    raise RunFailed(
        f"{failure}; nothing of this run was committed ({_untouched(tables)}); its files "
        f"are under {staging}/, safe to delete; see the top errors and hints above",
        summary=staged,
    )


def _untouched(tables: TableRun | None) -> str:
    where = "the earlier outputs are as they were"
    return where if tables is None else f"{where}, and so are the tables of {tables.dataset}"


def count_in_record(staged: str, without_evidence: int) -> None:
    """Put the run's count of prompts without evidence into its staged run record, once the
    pipeline has counted them and before the commit lists the record's size.

    The record itself is written by the pipeline's first step, so that a run failing
    later still leaves a staged file naming it. Rejected: the record written from the
    count inside the pipeline (a run whose pack step failed then staged nothing, and its
    failure lost the staging folder it names). A job that commits itself (Dataflow) does
    the same in its own last step (`pipelines.own_commit`)."""
    for path in matching_files(f"{staged}/runs/*.jsonl"):
        with FileSystems.open(path) as handle:
            record = RunRecord.model_validate_json(handle.read())
        counted = record.model_copy(update={"prompts_without_evidence": without_evidence})
        with FileSystems.create(path) as handle:
            handle.write((counted.model_dump_json() + "\n").encode("utf-8"))


@dataclass(frozen=True)
class Phases:
    """The bound of every sink call of one run, per phase (`transforms.io.bounded`):
    `--sink_timeout_seconds`, naming the sink, the phase and the staging folder."""

    settings: Settings
    staging: str
    """The run's staging folder, `<output>/.tmp-<run>`."""

    def files(self, phase: str) -> Bound:
        """The bound of a call to `--output` in `phase`."""
        output = self.settings.output
        return Bound(self.settings.sink_timeout_seconds, f"--output {output}", phase, self.staging)

    def tables(self, phase: str) -> Bound:
        """The bound of a call to `--bigquery_dataset` in `phase`."""
        dataset = self.settings.sinks.dataset
        timeout = self.settings.sink_timeout_seconds
        return Bound(timeout, f"--bigquery_dataset {dataset}", phase, self.staging)

    def lost_lock(self) -> str | None:
        """Why the run no longer holds its lock (None: it does). The lock stays until the
        run ends, so its absence means the folder was deleted, moved or unmounted, or the
        lock deleted: Beam's sinks would make the folder again and the run would commit
        the half it still had."""
        output = self.settings.output
        lock = f"{output}/{LOCK}"
        if FileSystems.exists(lock):
            return None
        return (
            f"--output {output} no longer holds this run's lock {lock}: the folder was "
            f"deleted, moved or unmounted, or the lock deleted, while the run ran"
        )

    def probes(self, tables: TableRun | None) -> list[tuple[Bound, Callable[[], str | None]]]:
        """What the staging phase asks of each sink it writes while the pipeline runs: the
        run's lock still in `--output` (Cloud Storage: the service answers), the dataset
        there and answering."""
        found = [(self.files("staging"), self.lost_lock)]
        if tables is not None:
            dataset, timeout = tables.dataset, self.settings.sink_timeout_seconds
            found.append(
                (self.tables("staging"), lambda: dataset_problem(dataset, timeout, created=False))
            )
        return found

    def staged(self, pipeline: Callable[[], T], tables: TableRun | None) -> T:
        """The pipeline phase: `pipeline()` under the staging probes (`watch`). When it
        fails, a lost lock is named first: a vanished folder is the cause whichever step
        saw it first (a write's finalize finding its files gone can beat the probe)."""
        try:
            return watch(pipeline, self.probes(tables))
        except SinkTimeout:
            raise  # a sink that stopped answering: asking it again would only wait
        except Exception:
            self.check_lock()
            raise

    def check_lock(self) -> None:
        """Before the commit: `RunFailed` when the run lost its lock (`lost_lock`)."""
        problem = self.files("commit")(self.lost_lock, "checking the lock")
        if problem is not None:
            raise RunFailed(
                f"{problem}; nothing of this run was committed; what is left of its files "
                f"is under {self.staging}/"
            )


def commit_files(output: str, staging: str, replaced: list[str], bound: Bound) -> None:
    """Move the staged files into `output`, all or nothing (`transforms.staging.commit`),
    each move within `bound`."""
    try:
        commit(f"{output}/{staging}", output, BATCH_FILE_TYPES, replaced, bound)
    except SinkTimeout:
        raise  # cut off: whether everything moved back is unknown
    except Exception as err:
        why = str(err) if isinstance(err, SinkRefused) else f"{type(err).__name__}: {err}"
        raise RunFailed(
            f"the commit failed ({why}); {output} is as the commit "
            f"found it (nothing of this run moved in); this run's files are under "
            f"{output}/{staging}/"
        ) from err


def commit_rows(
    tables: TableRun | None, record: RunRecord, output: str, earlier: list[str]
) -> str | None:
    """Commit the staged BigQuery rows and the run `record` in one transaction, replacing
    the job's `earlier` run (`transforms.io.table_commit`); what it committed, for the
    summary (None: no rows go to BigQuery)."""
    if tables is None:
        return None
    try:
        commit_tables(tables, record, earlier)
    except Exception as err:
        raise RunFailed(
            f"the BigQuery commit failed ({type(err).__name__}: {err}); the tables of "
            f"{tables.dataset} are as they were (nothing of run {tables.run_id} is in them), "
            f"while its files are committed under {output}; rerun with --overwrite, "
            f"its staging tables {tables.prefix}* are kept until they expire"
        ) from err
    return describe(tables, earlier)


def clean_up(cleanup: Callable[[], None], bound: Bound, what: str) -> None:
    """A clean-up after the run (its lock given back, its staging tables dropped) within
    `bound`; one the sink does not answer is left, said in a warning: a lock for the next
    run on this host to take over (its process is gone by then), tables to expire."""
    try:
        bound(cleanup, what)
    except (SinkTimeout, SinkRefused) as err:
        _LOG.warning("left undone, %s: %s", what, err)


def deliver(settings: Settings, bound: Step = unbounded) -> DeliveryReport | None:
    """Publish a committed run's prompts to `--prompts_topic`, if named
    (`transforms.delivery`): only once every check that can refuse the run has passed and
    the run is committed."""
    topic = settings.sinks.prompts_topic
    if topic is None:
        return None
    return deliver_outbox(
        settings.output, topic, settings.run_id, settings.sink_timeout_seconds, bound
    )
