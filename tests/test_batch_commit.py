"""Batch outputs are committed whole: a failed run leaves the earlier run as it was and says
where its partial files are; one run at a time per output; a row no sink can encode is one
dead letter, not a failed run."""

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from functools import partial
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that, equal_to
from hypothesis import given
from hypothesis import strategies as st

from packer import Catalog, PackerRuntime, pack_request
from pipelines.batch import RunFailed, run, start
from schemas import ManifestRow, PackingConfig
from schemas.tables import BATCH_FILE_TYPES as FILE_TYPES
from tests.batch_run import SAMPLES, flags, read_outputs
from tests.factories import candidate, document, request
from transforms.sink_rows import EncodableRows, arrow_encoder, json_encoder
from transforms.staging import (
    CommitRefused,
    OutputBusy,
    acquire,
    commit,
    commit_finished,
    committed,
    release,
)


def test_a_finished_run_leaves_no_staging_behind(tmp_path: Path) -> None:
    out = tmp_path / "out"
    finished = run(flags(SAMPLES / "requests.jsonl", out))
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [
            ".run.json",
            "dead_letters",
            "exclusion_counts",
            "exclusions",
            "manifests",
            "prompts",
            "runs",
        ]
    )
    record = json.loads((out / ".run.json").read_text())["files"]
    assert record == {f: (out / f).stat().st_size for f in _files(out) if f != ".run.json"}
    assert not list(out.glob("*/beam-temp-*"))
    assert len(read_outputs(out).prompts) == finished.summary.prompts_out


def test_a_failed_run_commits_nothing_and_names_what_it_left(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(flags(SAMPLES / "requests.jsonl", out))
    before = read_outputs(out)
    # The catalog is trusted: a bad row a request cites fails the run where the join reads it.
    broken = tmp_path / "catalog.jsonl"
    rows = (SAMPLES / "catalog.jsonl").read_text().splitlines()
    broken.write_text("\n".join([rows[0].replace('"deleted": false', '"deleted": 7'), *rows[1:]]))
    argv = [f"--catalog={broken}", "--catalog_mode=join", "--overwrite"]
    with pytest.raises(RunFailed, match=r"nothing was committed under .*\.tmp-") as failed:
        run(flags(SAMPLES / "requests.jsonl", out, *argv))
    staging = next(out.glob(".tmp-*"))
    assert str(staging) in str(failed.value)
    assert read_outputs(out) == before  # the earlier run is untouched


def _manifest(request_id: str) -> ManifestRow:
    result = pack_request(
        request(candidate("e1"), request_id=request_id),
        Catalog([document("d1")]),
        PackingConfig(),
        PackerRuntime.load(),
    )
    return result.manifest


def test_a_row_no_sink_can_encode_is_a_write_dead_letter() -> None:
    good = _manifest("good")
    too_big = _manifest("too-big").model_copy(update={"candidates_in": 2**64})
    surrogate = _manifest("surrogate").model_copy(update={"model": "\ud800"})
    for sink, encoder, bad in (
        ("manifests", arrow_encoder(ManifestRow), [too_big, surrogate]),
        ("dead_letters", json_encoder, [surrogate]),
    ):
        with test_pipeline.TestPipeline(runner="FnApiRunner") as p:
            checked = p | beam.Create([good, *bad]) | EncodableRows(sink, encoder)
            ids = checked.rows | "Ids" >> beam.Map(lambda row: row.request_id)
            letters = checked.dead_letters | "Letters" >> beam.Map(
                lambda d: (d.stage, d.request_id, d.source, json.loads(d.payload)["request_id"])
            )
            assert_that(ids, equal_to(["good"]), label="rows")
            expected = [("write", b.request_id, sink, b.request_id) for b in bad]
            assert_that(letters, equal_to(expected), label="letters")


def _files(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())


def test_a_second_run_is_refused_while_one_holds_the_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    lock = acquire(str(out), "long-run")  # a live run of this process holds it
    with pytest.raises(OutputBusy, match="another run is writing to --output"):
        run(flags(SAMPLES / "requests.jsonl", out))
    assert _files(out) == [Path(lock).name]  # refused before writing anything
    release(lock)
    finished = run(flags(SAMPLES / "requests.jsonl", out))
    assert finished.summary.prompts_out > 0
    assert not list(out.glob(".lock-*"))  # the finished run gave its lock back


def _contend(out: str, start_line: threading.Barrier, run_name: str) -> str | None:
    """Take the lock of `out` at the same instant as the other contenders; None: refused."""
    start_line.wait()
    try:
        return acquire(out, run_name)
    except OutputBusy as busy:
        assert "--output" in str(busy) and ".lock-output" in str(busy)
        return None


def test_of_runs_starting_together_exactly_one_takes_the_lock(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    for round_ in range(20):
        contend = partial(_contend, out, threading.Barrier(4))
        with ThreadPoolExecutor(4) as pool:
            won = [lock for lock in pool.map(contend, [f"run-{round_}-{i}" for i in range(4)])]
        assert len([lock for lock in won if lock is not None]) == 1, won
        release(next(lock for lock in won if lock is not None))


def test_a_full_disk_is_one_line_naming_the_folder(tmp_path: Path) -> None:
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(tiny)], check=True)
    try:
        with pytest.raises(RunFailed) as failed:
            run(flags(SAMPLES / "requests.jsonl", tiny / "out"))
        assert "\n" not in str(failed.value)
        assert f"{tiny}/out/.tmp-" in str(failed.value), failed.value
        assert "the disk is full: free space there" in str(failed.value)
        assert not (tiny / "out" / ".run.json").exists()
    finally:
        subprocess.run(["umount", "--lazy", str(tiny)], check=True)  # the runner's files close late


def test_a_lock_left_by_a_killed_run_is_taken_over(tmp_path: Path) -> None:
    out = tmp_path / "out"
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    out.mkdir()
    holder = {"run": "killed", "host": socket.gethostname(), "pid": int(gone.stdout)}
    (out / ".lock-killed").write_text(json.dumps(holder))
    assert run(flags(SAMPLES / "requests.jsonl", out)).summary.prompts_out > 0
    assert not list(out.glob(".lock-*"))


def test_a_commit_finding_another_runs_outputs_is_refused(tmp_path: Path) -> None:
    """A run that found `out` empty must not replace outputs another run committed meanwhile."""
    out, other = tmp_path / "out", tmp_path / "other"
    run(flags(SAMPLES / "requests.jsonl", out))
    run(flags(SAMPLES / "requests_flat.jsonl", other))
    before = read_outputs(out)
    staging = out / ".tmp-late"
    shutil.copytree(other, staging)
    with pytest.raises(CommitRefused, match="not told to replace"):
        commit(str(staging), str(out), FILE_TYPES, replaced=[])
    vanished = [*committed(str(out), FILE_TYPES), f"{out}/prompts/prompts-00009-of-00010.jsonl"]
    with pytest.raises(CommitRefused, match="1 files it was to replace are gone"):
        commit(str(staging), str(out), FILE_TYPES, replaced=vanished)
    assert read_outputs(out) == before
    assert read_outputs(staging) == read_outputs(other)  # nothing was moved


def test_a_stray_file_where_an_output_goes_stops_the_commit_before_any_move(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "dead_letters").write_text("not a folder")
    with pytest.raises(RunFailed, match="a file, not a folder") as failed:
        run(flags(SAMPLES / "requests.jsonl", out))
    assert committed(str(out), FILE_TYPES) == []  # nothing moved; the stray file stays
    assert (out / "dead_letters").read_text() == "not a folder"
    staging = next(out.glob(".tmp-*"))
    assert str(staging) in str(failed.value)
    assert read_outputs(staging).manifests


@contextmanager
def _immutable(folder: Path) -> Iterator[None]:
    """A folder no file may leave or enter, even for root (ext4's immutable attribute)."""
    subprocess.run(["chattr", "+i", str(folder)], check=True)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_a_commit_failing_mid_way_restores_the_earlier_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(flags(SAMPLES / "requests.jsonl", out))
    before, files = read_outputs(out), _files(out)
    # The earlier run's prompts cannot be moved aside: four outputs were by then.
    with _immutable(out / "prompts"), pytest.raises(RunFailed, match="is as the commit found it"):
        run(flags(SAMPLES / "requests_flat.jsonl", out, "--overwrite"))
    assert read_outputs(out) == before
    assert [f for f in _files(out) if not f.startswith(".tmp-")] == files


def test_a_commit_failing_on_the_new_files_takes_them_back(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "prompts").mkdir(parents=True)
    # The four other outputs are moved in before the prompts fail to.
    with _immutable(out / "prompts"), pytest.raises(RunFailed) as failed:
        run(flags(SAMPLES / "requests.jsonl", out))
    assert committed(str(out), FILE_TYPES) == []
    staging = next(out.glob(".tmp-*"))
    assert str(staging) in str(failed.value)
    assert read_outputs(staging).prompts


def test_a_job_no_one_waits_for_commits_itself_and_refuses_to_replace_without_overwrite(
    tmp_path: Path,
) -> None:
    """The Dataflow launcher's path (`clear_outputs=False`), on the local runner: the job's
    last step makes the same all-or-nothing commit."""
    out = tmp_path / "out"
    result, _ = start(flags(SAMPLES / "requests.jsonl", out), clear_outputs=False)
    result.wait_until_finish()
    assert not list(out.glob(".tmp-*"))
    first = read_outputs(out)
    assert first.manifests and first.prompts
    [record] = [json.loads(line) for f in (out / "runs").glob("*.jsonl") for line in f.open()]
    assert record["prompts_without_evidence"] == 0  # counted by the job's own last step
    # A runner retrying the commit step after it succeeded changes nothing.
    job = json.loads((out / ".run.json").read_text())["run"]
    commit_finished(f"{out}/{job}", str(out), FILE_TYPES, overwrite=True)
    assert read_outputs(out) == first
    # One cut off half way (a worker died during the renames) is refused, not guessed at.
    cut = tmp_path / "cut"
    shutil.copytree(out, cut / ".tmp-cut" / ".replaced")
    with pytest.raises(CommitRefused, match="cut off half way"):
        commit_finished(f"{cut}/.tmp-cut", str(cut), FILE_TYPES, overwrite=True)
    assert read_outputs(cut / ".tmp-cut" / ".replaced") == first
    with pytest.raises(Exception, match="--overwrite was not given"):
        result, _ = start(flags(SAMPLES / "requests_flat.jsonl", out), clear_outputs=False)
        result.wait_until_finish()
    assert read_outputs(out) == first
    assert read_outputs(next(out.glob(".tmp-*"))).manifests  # left whole in staging
    argv = flags(SAMPLES / "requests_flat.jsonl", tmp_path / "flat")
    start(argv, clear_outputs=False)[0].wait_until_finish()
    result, _ = start(
        flags(SAMPLES / "requests_flat.jsonl", out, "--overwrite"), clear_outputs=False
    )
    result.wait_until_finish()
    assert read_outputs(out) == read_outputs(tmp_path / "flat")


def _shards(root: Path, counts: dict[str, int], tag: str) -> None:
    for name, count in counts.items():
        for i in range(count):
            path = root / name / f"{name}-{i:05d}-of-{count:05d}.{FILE_TYPES[name]}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{tag} {name} {i}")


def _contents(root: Path) -> dict[str, str]:
    return {f: (root / f).read_text() for f in _files(root) if not f.startswith(".")}


shard_counts = st.fixed_dictionaries({name: st.integers(0, 2) for name in FILE_TYPES})


@given(shard_counts, shard_counts, st.sampled_from([None, *FILE_TYPES]))
def test_a_commit_is_whole_or_leaves_both_runs_as_they_were(
    earlier: dict[str, int], new: dict[str, int], frozen: str | None
) -> None:
    """Whatever the earlier and new files, and wherever a move fails (a folder no file may
    leave or enter): either every new file is in place and no earlier one, or the output and
    the staging directory are exactly as before."""
    with tempfile.TemporaryDirectory() as root:
        out, staging = Path(root) / "out", Path(root) / "out" / ".tmp-new"
        _shards(out, earlier, "earlier")
        _shards(staging, new, "new")
        before, staged = _contents(out), _contents(staging)
        replaced = committed(str(out), FILE_TYPES)
        if frozen is not None:
            (out / frozen).mkdir(parents=True, exist_ok=True)
        try:
            with _immutable(out / frozen) if frozen else nullcontext():
                commit(str(staging), str(out), FILE_TYPES, replaced)
        except OSError:
            assert _contents(out) == before
            assert _contents(staging) == staged
        else:
            assert _contents(out) == staged
            assert not staging.exists()


def test_a_run_killed_during_its_commit_stops_the_next_one_naming_the_files(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    run(flags(SAMPLES / "requests.jsonl", out))
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    holder = {"run": ".tmp-killed", "host": socket.gethostname(), "pid": int(gone.stdout)}
    (out / ".lock-tmp-killed").write_text(json.dumps(holder))
    shutil.move(out / "prompts", out / ".tmp-killed" / ".replaced" / "prompts")
    with pytest.raises(OutputBusy, match=r"killed during its commit.*\.tmp-killed/\.replaced/"):
        run(flags(SAMPLES / "requests.jsonl", out, "--overwrite"))
    assert (out / ".lock-tmp-killed").exists()


def test_a_job_no_one_waits_for_fails_on_too_many_dead_letters_after_committing(
    tmp_path: Path,
) -> None:
    """The launcher's path again: the dead-letter gate of `evpack batch` fails the job itself
    (its final state is what a Dataflow user sees), once its outputs are committed."""
    out = tmp_path / "out"
    # samples/requests.jsonl: 6 of its 34 records are dead letters (18%)
    argv = flags(SAMPLES / "requests.jsonl", out, "--max_dead_letter_percent=10")
    with pytest.raises(Exception, match=r"18% of the records read \(6 of 34\) are dead letters"):
        start(argv, clear_outputs=False)[0].wait_until_finish()
    assert read_outputs(out).dead_letters and not list(out.glob(".tmp-*/manifests"))
    held = flags(SAMPLES / "requests.jsonl", tmp_path / "held", "--max_dead_letter_percent=20")
    start(held, clear_outputs=False)[0].wait_until_finish()
    assert read_outputs(tmp_path / "held").prompts
