"""Whole or nothing for readers: what belongs to a run goes with it when it is replaced,
and a folder that is not one whole committed run is refused, never read as one."""

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.batch import RunFailed, run
from pipelines.report import main as report_main
from pipelines.report import write_report
from pipelines.verification import replay
from pipelines.verification.verify import main as verify_main
from pipelines.verification.verify import run as verify
from tests.batch_run import SAMPLES, flags
from transforms import run_folder, staging
from transforms.staging import OutputBusy

ANSWERS = SAMPLES / "answers_anthropic_good_and_bad.jsonl"


def _verified(out: Path) -> None:
    verify([f"--answers={ANSWERS}", f"--run={out}", "--runner=FnApiRunner"])
    assert list((out / "verifications").rglob("*.parquet"))


def test_an_overwrite_sets_the_earlier_runs_verifications_aside_with_it(tmp_path: Path) -> None:
    """Before: the earlier run's verifications stayed, and the report showed answers checked
    against prompts the new run no longer has."""
    out = tmp_path / "out"
    run(flags(SAMPLES / "requests.jsonl", out, "--prompt_format=anthropic_batch"))
    _verified(out)
    (out / "replay").mkdir()
    (out / "replay" / "replay-00000-of-00001.parquet").write_bytes(b"earlier rows")
    # a failed overwrite leaves them with the run they belong to
    broken = tmp_path / "catalog.jsonl"
    rows = (SAMPLES / "catalog.jsonl").read_text().splitlines()
    broken.write_text("\n".join([rows[0].replace('"deleted": false', '"deleted": 7'), *rows[1:]]))
    argv = [f"--catalog={broken}", "--catalog_mode=join", "--overwrite"]
    with pytest.raises(RunFailed):
        run(flags(SAMPLES / "requests.jsonl", out, *argv))
    assert list((out / "verifications").rglob("*.parquet"))
    run(flags(SAMPLES / "requests_flat.jsonl", out, "--overwrite"))
    for name in ("verifications", "verify_dead_letters", "replay"):
        assert not [p for p in (out / name).rglob("*") if p.is_file()], name
    page = write_report(out, tmp_path / "report").read_text(encoding="utf-8")
    assert "No answers verified yet" in page
    # without --overwrite, a folder holding only an earlier run's verifications is refused
    alone = tmp_path / "alone"
    shutil.copytree(out / "manifests", alone / "verifications" / "x")
    with pytest.raises(ValueError, match=r"earlier run.*verifications/x/"):
        run(flags(SAMPLES / "requests.jsonl", alone))


def _replay(run_dir: Path, out: Path) -> int:
    return replay.main(
        [
            f"--run={run_dir}",
            f"--input={SAMPLES / 'requests.jsonl'}",
            f"--catalog={SAMPLES / 'catalog.jsonl'}",
            f"--config={SAMPLES / 'config.yaml'}",
            f"--output={out}",
            "--runner=FnApiRunner",
        ]
    )


def test_replay_refuses_a_folder_without_its_run_record_or_with_a_file_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a copy without its run record and without its exclusions replayed as `same`."""
    out = tmp_path / "out"
    run(flags(SAMPLES / "requests.jsonl", out))
    copy = tmp_path / "copy"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns(".run.json", "exclusions"))
    assert _replay(copy, tmp_path / "r1") == 2
    err = capsys.readouterr().err.strip()
    assert f"--run {copy} has no run record (.run.json)" in err and "\n" not in err
    assert not (tmp_path / "r1").exists()
    shutil.copy(out / ".run.json", copy / ".run.json")
    assert _replay(copy, tmp_path / "r2") == 1
    err = capsys.readouterr().err.strip()
    assert f"{copy}/exclusions/exclusions-00000-of-00001.parquet is missing" in err
    assert not (tmp_path / "r2").exists()
    assert _replay(out, tmp_path / "r3") == 0


def _dead_pid() -> int:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(gone.stdout)


def test_a_first_run_killed_during_its_commit_is_no_run_to_readers_and_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the report drew the outputs moved in as a run, and the next run was refused
    as "an earlier run" without naming the staging folder holding the rest."""
    out = tmp_path / "out"
    moved: list[str] = []
    real_move = staging._move

    def killed_after_three(source: str, destination: str) -> None:
        if len(moved) == 3:
            raise KeyboardInterrupt  # the process dies here: nothing is moved back
        moved.append(source)
        real_move(source, destination)

    monkeypatch.setattr(staging, "_move", killed_after_three)
    with pytest.raises(KeyboardInterrupt):
        run(flags(SAMPLES / "requests.jsonl", out))
    monkeypatch.undo()
    (folder,) = out.glob(".tmp-*")
    holder = {"run": folder.name, "host": socket.gethostname(), "pid": _dead_pid()}
    (out / f".lock-{folder.name.lstrip('.')}").write_text(json.dumps(holder))
    assert len(run_folder.committed(str(out), {"dead_letters": "jsonl", "exclusions": "parquet"}))

    assert report_main([f"--audit={out}", f"--out={tmp_path / 'report'}"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"the commit of {folder}/ was cut off half way" in err and "\n" not in err
    assert not (tmp_path / "report" / "index.html").exists()
    assert verify_main([f"--answers={ANSWERS}", f"--run={out}"]) == 2
    assert f"the commit of {folder}/ was cut off" in capsys.readouterr().err
    for extra in ((), ("--overwrite",)):
        with pytest.raises(OutputBusy, match=f"its staging folder {folder}/"):
            run(flags(SAMPLES / "requests.jsonl", out, *extra))


def test_a_report_refuses_a_run_whose_recorded_file_is_gone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    run(flags(SAMPLES / "requests.jsonl", out))
    (shard,) = (out / "exclusions").glob("*.parquet")
    shard.unlink()
    assert report_main([f"--audit={out}", f"--out={tmp_path / 'report'}"]) == 2
    assert f"{shard} is missing" in capsys.readouterr().err
    # a file the record does not list (left by hand) is not read as the run's
    whole = tmp_path / "whole"
    run(flags(SAMPLES / "requests.jsonl", whole))
    before = write_report(whole, tmp_path / "r1").read_text(encoding="utf-8")
    shutil.copy(SAMPLES / "requests.jsonl", whole / "dead_letters" / "dead_letters-9-of-9.jsonl")
    assert write_report(whole, tmp_path / "r2").read_text(encoding="utf-8") == before
