"""The last step of a batch job no one waits for (Dataflow): the job commits its own
files, fails itself on the exit-1 gates, and delivers its prompts.

`evpack batch` decides, commits and delivers in its own process after the job
(`pipelines.run_commit`); a Dataflow launcher returns at once and may not even reach
the output bucket, so the job does it as its last step, once every file is written.
Rejected: a separate commit job after the Dataflow job (a second launch for the
user to wait on, and a window in which the outputs are staged but unowned).
"""

from dataclasses import dataclass

import apache_beam as beam

from pipelines.run_commit import RunFailed, count_in_record
from pipelines.summary import hopeless_run
from schemas.tables import BATCH_FILE_TYPES
from transforms.delivery import deliver_outbox
from transforms.staging import commit_finished


@dataclass(frozen=True)
class FinalCommit:
    """A job's own last step: commit `staging` into `output` once every file is written,
    then fail the job when the run is hopeless (`pipelines.summary.hopeless_run`), as
    `evpack batch` exits 1: nobody waits for a Dataflow job to read its summary, so its
    final state is what says the run failed. Committed first, so the dead letters are
    there to read; a retried step finds its commit made and fails again. Only a run
    that is not hopeless delivers its prompts to `topic`, if one is named
    (`transforms.delivery`), so a failed run never starts paid generations."""

    staging: str
    output: str
    overwrite: bool
    max_dead_letter_percent: float = 100.0
    topic: str | None = None
    run_id: str = ""
    timeout_seconds: float = 0

    def __call__(
        self, records_in: int, prompts_out: int, dead_letters: int, without_evidence: int
    ) -> None:
        count_in_record(self.staging, without_evidence)
        commit_finished(self.staging, self.output, BATCH_FILE_TYPES, self.overwrite)
        hopeless = hopeless_run(records_in, prompts_out, dead_letters, self.max_dead_letter_percent)
        if hopeless is not None:
            raise RunFailed(f"{hopeless}; the outputs are committed under {self.output}")
        if self.topic is not None:
            failure = deliver_outbox(
                self.output, self.topic, self.run_id, self.timeout_seconds
            ).failure()
            if failure is not None:
                raise RuntimeError(failure)


def commit_last(
    p: beam.Pipeline,
    final_commit: FinalCommit,
    counted: dict[str, beam.PCollection],
    written: list[beam.PCollection],
) -> None:
    """The job's own last step: `final_commit` once every file of `written` is written,
    with the counts of records read, prompts made, dead letters and prompts without
    evidence (in that order)."""
    counts = [
        beam.pvalue.AsSingleton(rows | f"Gate{name}" >> beam.combiners.Count.Globally())
        for name, rows in counted.items()
    ]
    _ = (
        p
        | "CommitOnce" >> beam.Create([final_commit])
        | "Commit"
        >> beam.Map(
            lambda commit_step, read, made, refused, empty, *_: commit_step(
                read, made, refused, empty
            ),
            *counts,
            *[beam.pvalue.AsList(files) for files in written],
        )
    )
