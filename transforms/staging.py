"""A batch run writes under a staging directory, holds a lock on its output, and commits whole.

What holds where:
- **Local and gs:// (`evpack batch` on the FnApiRunner)**: one run at a time per
  `--output`. A run takes the lock `<output>/.lock-output` before the pipeline
  starts, created only if absent (`create_if_absent`), so of runs started in
  the same instant exactly one wins; a run finding a live lock is refused
  (`OutputBusy`). A lock left by a killed run on this host (its process is
  gone) is taken over; one from another host is named with the command to
  delete it.
  The run writes everything under `<output>/.tmp-<run>/` (hidden: output
  globs never match it) and, once the pipeline succeeded, `commit` moves the
  files into `<output>/<name>/`. The commit is all or nothing: every check
  (no stray file where a folder goes, no destination taken, the earlier
  outputs exactly those the run was told to replace) is made before the
  first move; the replaced files are moved aside, not deleted, until every
  new file is in place, and a failure mid-way moves everything back. A
  commit finding committed outputs it was not told to replace (a run that
  did not take the lock) is refused and leaves its files in staging.
  A process killed during the few renames of a commit leaves both runs'
  files under the staging directory, and its lock, which then refuses the
  next run naming where each run's files are. The last file moved
  in is the run record `<output>/.run.json` (each committed file and its
  size), against which readers such as `evpack replay` check the folder.
- **Dataflow** (`pipelines.launch`): the launcher must return at once and
  may not reach the output bucket, so no lock is taken; the job stages its
  files the same way and its last step, run on a worker once every file is
  written, makes the same all-or-nothing commit (`commit_finished`). What the
  output held at submission is unknown there: without `--overwrite` a commit
  finding committed outputs is refused (the job fails, its files stay in
  staging); with it, the outputs found at commit are replaced. Two jobs into
  one `--output` with `--overwrite` leave the later one's outputs, whole.

Rejected: writing in place and deleting on failure (a killed process cannot
clean up, and deleting would also take the evidence of what went wrong).
Rejected: deleting the replaced files before the moves (a failed move then
leaves neither run whole). Rejected: a lock file per run, created then listed
(two runs started together both saw the other and both gave way: a scheduler
retrying both livelocked).
"""

import json
import os
import socket
import time
from collections.abc import Mapping
from functools import partial

from apache_beam.io.filesystems import FileSystems
from google.api_core.exceptions import PreconditionFailed
from google.cloud import storage

from transforms.io.bounded import Step, unbounded
from transforms.run_folder import (
    ASIDE,
    RECORD,
    STAGING_PREFIX,
    committed,
    cut_off,
    files_under,
    matched,
    read_record,
    run_files,
    sizes,
)

LOCK_PREFIX = ".lock-"
LOCK = f"{LOCK_PREFIX}output"
"""The one lock of an output; `LOCK_PREFIX` also finds the per-run locks of versions
before it (a lock per run, created then listed)."""


class OutputBusy(ValueError):
    """Another run holds the output location: refused before the pipeline starts."""


class CommitRefused(RuntimeError):
    """The commit found something it may not overwrite; nothing was moved."""


def staging_name(run_id: str) -> str:
    """The staging directory name of run `run_id`: hidden, so output globs never match it."""
    return f"{STAGING_PREFIX}{run_id}"


def _locks(output: str) -> list[str]:
    return matched([f"{output}/{LOCK_PREFIX}*"])


def _holder(lock: str) -> dict[str, object]:
    try:
        with FileSystems.open(lock) as handle:
            held = json.loads(handle.read().decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return held if isinstance(held, dict) else {}


def _is_dead(holder: Mapping[str, object]) -> bool:
    """Whether the lock's run was a process of this host that no longer exists."""
    pid = holder.get("pid")
    if holder.get("host") != socket.gethostname() or not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _who(holder: Mapping[str, object]) -> str:
    if not holder:
        return "its lock file cannot be read"
    since = holder.get("since")
    started = (
        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(since))
        if isinstance(since, int | float)
        else "an unknown time"
    )
    return f"process {holder.get('pid')} on {holder.get('host')}, since {started}"


def _clear_dead(output: str) -> None:
    """Delete the locks of runs of this host whose process is gone; raise `OutputBusy`
    naming a live one, or a dead one killed during its commit."""
    for lock in _locks(output):
        holder = _holder(lock)
        run_name = holder.get("run")
        staging = f"{output}/{run_name}"
        if _is_dead(holder) and isinstance(run_name, str) and cut_off(staging):
            raise OutputBusy(
                f"a run was killed during its commit to --output {output}: the files it had "
                f"not moved in are in its staging folder {staging}/, those it was replacing "
                f"(if any) under {staging}/{ASIDE}/, the rest in place; put back what you "
                f"need, then delete {staging}/ and {lock}"
            )
        if _is_dead(holder):
            FileSystems.delete([lock])
            continue
        raise OutputBusy(
            f"another run is writing to --output {output} ({_who(holder)}); wait for it, "
            f"choose another --output, or delete {lock} if no run is writing there"
        )


def create_if_absent(path: str, data: bytes) -> bool:
    """Write `data` as `path` unless it exists; whether this call created it.

    One winner of any number of simultaneous callers: locally an exclusive create
    (`O_EXCL`), on Cloud Storage an upload with the precondition "generation 0"
    (`ifGenerationMatch=0`: only if no live object has the name). Rejected: Beam's
    FileSystems (no create-if-absent; a lock per run created then listed made two
    simultaneous runs both give way, and a scheduler retrying both livelocked)."""
    if path.startswith("gs://"):
        bucket, name = path.removeprefix("gs://").split("/", 1)
        client = storage.Client()
        try:
            client.bucket(bucket).blob(name).upload_from_string(data, if_generation_match=0)
        except PreconditionFailed:
            return False
        finally:
            client.close()
        return True
    try:
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
    return True


def acquire(output: str, run: str) -> str:
    """Take the lock of `output` for `run`; returns the lock file for `release`.

    Raises `OutputBusy` naming the other run's lock when one is live. Of runs starting
    together exactly one wins the lock (`create_if_absent`); the others are refused
    naming it, as if they had come later.
    """
    mine = f"{output}/{LOCK}"
    holder = {"run": run, "host": socket.gethostname(), "pid": os.getpid(), "since": time.time()}
    if not FileSystems.exists(output):  # a location that cannot be written is refused earlier
        try:
            FileSystems.mkdirs(output)
        except OSError:
            if not FileSystems.exists(output):
                raise  # else another run starting made it in the meantime
    for _ in range(2):  # once more after clearing a dead run's lock
        _clear_dead(output)
        if create_if_absent(mine, json.dumps(holder).encode("utf-8")):
            return mine
    raise OutputBusy(
        f"another run started writing to --output {output} at the same time (lock {mine}); "
        f"choose another --output or retry once it finished"
    )


def release(lock: str) -> None:
    """Give the lock back (a lock already gone is fine: someone cleared it by hand)."""
    if FileSystems.exists(lock):
        FileSystems.delete([lock])


def _stray_file(directory: str) -> bool:
    """Whether a file (not a folder) sits where a local output folder goes.

    On gs:// a prefix and an object of the same name coexist, so nothing is in the way.
    """
    local = "://" not in directory
    return local and os.path.lexists(directory) and not os.path.isdir(directory)


def _plan(
    staging: str, output: str, outputs: Mapping[str, str], replaced: list[str]
) -> list[tuple[str, str]]:
    """Every move of the commit, in order, after checking that each can be made (the run
    record is written into staging then, to move in last)."""
    found = run_files(output, outputs)
    foreign = sorted(set(found) - set(replaced))
    if foreign:
        raise CommitRefused(
            f"{output} changed while this run ran: {len(foreign)} committed files this run was "
            f"not told to replace (e.g. {foreign[0]}), another run committed there"
        )
    gone = sorted(set(replaced) - set(found))
    if gone:
        raise CommitRefused(
            f"{output} changed while this run ran: {len(gone)} files it was to replace are gone "
            f"(e.g. {gone[0]}); check who else writes there"
        )
    sources = committed(staging, outputs)
    destinations = [output + s.removeprefix(staging) for s in sources]
    folders = sorted({FileSystems.split(d)[0] for d in destinations})
    stray = [d for d in folders if _stray_file(d)]
    if stray:
        raise CommitRefused(f"a file, not a folder, is where the outputs go: {stray[0]}")
    taken = [d for d in destinations if d not in set(replaced) and FileSystems.exists(d)]
    if taken:
        raise CommitRefused(f"{taken[0]} already exists and is not an output to replace")
    earlier = [r for r in (*replaced, f"{output}/{RECORD}") if FileSystems.exists(r)]
    aside = [f"{staging}/{ASIDE}{r.removeprefix(output)}" for r in earlier]
    sources.append(_write_record(staging, sources))
    destinations.append(f"{output}/{RECORD}")
    return [*zip(earlier, aside, strict=True), *zip(sources, destinations, strict=True)]


def _write_record(staging: str, sources: list[str]) -> str:
    path = f"{staging}/{RECORD}"
    record = {"run": FileSystems.split(staging)[1], "files": sizes(staging, sources)}
    with FileSystems.create(path) as handle:
        handle.write(json.dumps(record, indent=1, sort_keys=True).encode("utf-8"))
    return path


def _recorded_run(output: str) -> str | None:
    """The staging name of the run whose commit the record of `output` is from."""
    record = read_record(output)
    return None if record is None else record.get("run")


def _move(source: str, destination: str) -> None:
    folder = FileSystems.split(destination)[0]
    if not FileSystems.exists(folder):
        FileSystems.mkdirs(folder)
    FileSystems.rename([source], [destination])


def commit_finished(staging: str, output: str, outputs: Mapping[str, str], overwrite: bool) -> int:
    """The commit a job makes itself once its writes are done (Dataflow: no one waits for it).

    Nothing is known of what `output` held when the job was submitted, so
    only `overwrite` allows replacing committed outputs; without it a commit
    finding any is refused and the job fails with its files in staging. A
    runner may run the step again after it succeeded: the run record then
    names this job, and nothing is done (a second commit would take its own
    outputs for an earlier run's). Run again after a worker died half way
    through the renames, it is refused, naming where each run's files are.
    """
    if _recorded_run(output) == FileSystems.split(staging)[1]:
        return  # a retried step: this job's commit was made
    if cut_off(staging):
        raise CommitRefused(
            f"an earlier attempt of this commit was cut off half way: the replaced files are "
            f"under {staging}/{ASIDE}/, the rest of this job's under {staging}/ and {output}"
        )
    found = run_files(output, outputs)
    if found and not overwrite:
        raise CommitRefused(
            f"{output} holds {len(found)} committed files (e.g. {found[0]}) and --overwrite "
            f"was not given; this job's outputs are left under {staging}/"
        )
    commit(staging, output, outputs, found)


def commit(
    staging: str,
    output: str,
    outputs: Mapping[str, str],
    replaced: list[str],
    bound: Step = unbounded,
) -> None:
    """Move the shards of each output (name -> extension) from `staging` to `output`.

    `replaced` are the committed files of an earlier run the run was told to
    replace (found when it started, with `--overwrite`). The run record
    (`RECORD`) moves in last, with them. Raises `CommitRefused` (nothing
    moved) or the error of a failed move, after moving every file back.
    `bound` runs each step (`transforms.io.bounded.Bound`: a sink that stops
    answering ends the commit within `--sink_timeout_seconds`; a commit cut
    off so, its moving back included, is named by the next run as one killed).
    """
    moves = bound(lambda: _plan(staging, output, outputs, replaced), "checking the commit")
    done: list[tuple[str, str]] = []
    try:
        for source, destination in moves:
            bound(partial(_move, source, destination), f"moving {source}")
            done.append((source, destination))
    except Exception:
        for source, destination in reversed(done):
            bound(partial(_move, destination, source), f"moving {destination} back")
        bound(partial(FileSystems.delete, [f"{staging}/{RECORD}"]), "ending the commit")
        raise
    bound(partial(_remove, staging), f"deleting {staging}")


def _remove(staging: str) -> None:
    """Delete the staging directory: the replaced files set aside, Beam's temp leftovers.

    File by file first, as an object store has no directory to delete.
    """
    left = files_under(staging)
    if left:
        FileSystems.delete(left)
    if FileSystems.exists(staging):
        FileSystems.delete([staging])
