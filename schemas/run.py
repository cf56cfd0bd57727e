"""The run record: what a batch run read and how, written once beside its outputs."""

import time
import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict

from schemas._types import UtcDatetime

RUN_FIELDS = frozenset({"run_id"})
"""The fields of an audit row that say which run wrote it, not what the run decided: two
runs of the same request and config give rows equal but for these (`evpack replay`
compares without them)."""


def new_run_id() -> str:
    """A fresh id for one run of a job: its UTC start, to the second, and 8 random hex
    digits, so ids sort by start and two runs started in the same second differ.

    Made once per run by the job's resolver; the staging folder, audit rows and
    published messages of the run carry it.
    """
    return f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}"


class RunRecord(BaseModel):
    """One batch run's inputs and settings, as `runs/` holds them for `evpack report`, and as
    a row of the `runs` table in BigQuery (one per job and key: its last committed run).

    The manifests say what each prompt was built with (config hash, builder,
    model); only the run knows which files it read. Rejected: these fields on
    every manifest row (the same strings once per request).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    builder_version: str
    config_hash: str
    prompt_format: str
    model: str
    input: str
    input_format: str
    input_shape: str
    catalog: str | None
    """The catalog file or glob; None when it is read from Bigtable (`catalog_mode`)."""
    catalog_mode: str
    event_time: UtcDatetime
    run_id: str | None = None
    """This run's id, which every audit row it wrote carries (null in records of versions
    before run ids)."""
    without_evidence: Literal["send", "hold"] = "send"
    """What the run did with prompts that carry no evidence (`--prompts_without_evidence`):
    sent with the others, or held in `held_prompts/`, never sent to the generation queue."""
    prompts_without_evidence: int | None = None
    """How many of the run's prompts carry no evidence (every candidate excluded): counted by
    the run (null in records of versions before the count)."""
    input_limit: int | None = None
    """The run's budget settings (its config's, or the flags that overrode it:
    `--input_limit`, `--reserved_answer`, `--max_evidence_tokens`); a request's own
    `budget` still wins for that request. Null in records of versions before them, and
    `max_evidence_tokens` also when the run set no cap."""
    reserved_answer: int | None = None
    max_evidence_tokens: int | None = None
    job: str | None = None
    """The job this run is a run of (`--audit_job`, by default its `--output`)."""
    run_key: str | None = None
    """The part of its job this run fills (`--run_key`, by default its `--output`): in
    BigQuery a rerun of the same job and key replaces the rows of its earlier run, runs of
    other keys stay (`transforms.io.table_commit`). Null in records of versions before
    keys, which are keyed by their job."""
