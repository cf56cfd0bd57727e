"""Paths are what they say: no output is written or deleted through a link leading out of
`--output`, a folder name is never read as a pattern, and no command writes over one of
its own inputs. Refused before anything is written, with one line and status 2."""

import json
import shutil
from pathlib import Path

import pytest

from pipelines import batch, catalog, convert
from pipelines.batch import run
from pipelines.verification import verify
from tests.batch_run import SAMPLES, flags, read_outputs
from tests.factories import document
from transforms.catalog.bigtable_table import TableAddress, create_table, load_catalog, read_entries

LANGCHAIN = {"page_content": "Refunds take 5 days.", "metadata": {"document_id": "d1"}}
REQUEST = ["--request_id=q1", "--question=How long?", "--tenant_id=acme", "--user_id=ana"]


def _refused(main, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line of a command refused with status 2."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    return err


def test_an_output_folder_linked_out_of_the_output_is_refused_naming_the_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `--overwrite` moved the earlier shard out of the linked folder, wrote its own
    there and deleted the earlier one, exit 0."""
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    run(flags(SAMPLES / "requests.jsonl", out))
    shutil.move(out / "prompts", elsewhere)
    (out / "prompts").symlink_to(elsewhere, target_is_directory=True)
    before = {p.name: p.read_bytes() for p in elsewhere.iterdir()}
    err = _refused(batch.main, flags(SAMPLES / "requests_flat.jsonl", out, "--overwrite"), capsys)
    assert f"{out}/prompts is a link leading out of it" in err
    assert {p.name: p.read_bytes() for p in elsewhere.iterdir()} == before
    assert not list(out.glob(".tmp-*")) and not list(out.glob(".lock-*"))  # nothing written
    # a link deeper down, where verify writes an answer set, is refused the same way
    (out / "prompts").unlink()
    shutil.move(elsewhere, out / "prompts")
    (out / "verifications").mkdir()
    (out / "verifications" / "claude").symlink_to(elsewhere, target_is_directory=True)
    argv = flags(SAMPLES / "requests_flat.jsonl", out, "--overwrite")
    assert "verifications/claude is a link leading out" in _refused(batch.main, argv, capsys)


def test_an_output_link_inside_the_output_and_links_to_the_output_itself_are_fine(
    tmp_path: Path,
) -> None:
    real = tmp_path / "real"
    (tmp_path / "out").symlink_to(real, target_is_directory=True)
    real.mkdir()
    assert run(flags(SAMPLES / "requests.jsonl", tmp_path / "out")).summary.prompts_out > 0
    assert read_outputs(real).prompts


@pytest.mark.parametrize("output", ["runs/exp[1]", "runs/exp*", "runs/exp?", "~/runs/exp1"])
def test_an_output_read_as_a_pattern_is_refused_before_the_run(
    output: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `--output 'runs/exp[1]'` failed every run with tracebacks and left its lock."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "exp1").mkdir(parents=True)
    err = _refused(batch.main, flags(SAMPLES / "requests.jsonl", Path(output)), capsys)
    assert f"--output {output!r}" in err
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["exp1"]
    assert not (tmp_path / "~").exists()


def test_spaces_percent_braces_and_unicode_in_an_output_are_taken_as_written(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out dir" / "100% {x} ü $HOME" / ".." / "run"
    run(flags(SAMPLES / "requests.jsonl", out))
    assert read_outputs(tmp_path / "out dir" / "run").prompts


def test_an_output_that_is_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.write_text("keep")
    assert "is a file" in _refused(batch.main, flags(SAMPLES / "requests.jsonl", out), capsys)
    assert out.read_text() == "keep"


def test_convert_never_writes_over_one_of_its_inputs_or_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `--dead_letters` equal to `--output`, or to its own input, emptied that file."""
    source = tmp_path / "retrieved.json"
    source.write_text(json.dumps([LANGCHAIN, "not an item"]))
    alias = tmp_path / "alias.json"
    alias.symlink_to(source)
    out = tmp_path / "requests.jsonl"
    out.write_text("earlier\n")
    cases = {
        "--dead_letters": [f"--output={out}", f"--dead_letters={out}"],
        "--output": [f"--output={alias}"],
        "is an input": [f"--output={out}", f"--dead_letters={source}"],
    }
    for expected, argv in cases.items():
        err = _refused(convert.main, [f"--input={source}", *argv, "--overwrite", *REQUEST], capsys)
        assert expected in err, err
    assert json.loads(source.read_text())[0] == LANGCHAIN
    assert out.read_text() == "earlier\n"
    assert convert.main([f"--input={source}", f"--output={out}", "--overwrite", *REQUEST]) == 0


def test_verify_refuses_answers_in_the_folder_it_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An answer set's own dead letters given back as its answers: `--overwrite` would
    delete them before reading them."""
    out = tmp_path / "out"
    run(flags(SAMPLES / "requests.jsonl", out))
    letters = out / "verify_dead_letters" / "claude"
    letters.mkdir(parents=True)
    (letters / "claude-00000-of-00001.jsonl").write_text("{}\n")
    argv = [f"--answers={letters}/*.jsonl", f"--run={out}", "--overwrite"]
    err = _refused(verify.main, argv, capsys)
    assert f"lies in {letters}/" in err
    assert (letters / "claude-00000-of-00001.jsonl").read_text() == "{}\n"


@pytest.mark.emulators
def test_catalog_load_refuses_an_empty_export_unless_told(
    gcp_emulators, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: an empty export marked every document of the table deleted, exit 0."""
    address = TableAddress(gcp_emulators.project, "evpack", "empty")
    table = create_table(address)
    load_catalog(table, [document("keep")])
    empty = tmp_path / "catalog.jsonl"
    empty.write_text("\n")
    argv = [
        "load",
        f"--catalog={empty}",
        f"--bigtable_project={address.project}",
        f"--bigtable_instance={address.instance}",
        f"--bigtable_table={address.table}",
    ]
    assert "--allow_empty" in _refused(catalog.main, argv, capsys)
    (kept,) = read_entries(table, [("t1", "keep")]).values()
    assert kept is not None and not json.loads(kept)["deleted"]
    assert catalog.main([*argv, "--allow_empty"]) == 0
    assert "1 no longer in the file marked deleted" in capsys.readouterr().out
    (gone,) = read_entries(table, [("t1", "keep")]).values()
    assert gone is not None and json.loads(gone)["deleted"]


def test_a_batch_input_inside_the_folders_a_run_replaces_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--overwrite` sets the earlier run's folders aside and deletes them: an input kept
    there would be read, then deleted with them."""
    out = tmp_path / "out"
    run(flags(SAMPLES / "requests.jsonl", out))
    kept = out / "verifications" / "requests.jsonl"
    kept.parent.mkdir()
    shutil.copy(SAMPLES / "requests.jsonl", kept)
    err = _refused(batch.main, flags(kept, out, "--overwrite"), capsys)
    assert f"{kept} is an input of this run and lies in {out}/verifications/" in err
    assert kept.read_bytes() == (SAMPLES / "requests.jsonl").read_bytes()
    beside = out / "requests.jsonl"  # beside the outputs, not in them: fine
    shutil.move(kept, beside)
    assert run(flags(beside, out, "--overwrite")).summary.prompts_out > 0
    assert beside.exists()


def test_a_report_on_a_pattern_or_into_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pipelines.report import main as report_main

    run(flags(SAMPLES / "requests.jsonl", tmp_path / "exp1"))
    argv = [f"--audit={tmp_path}/exp[1]", f"--out={tmp_path / 'report'}"]
    assert "reads as a pattern" in _refused(report_main, argv, capsys)
    (tmp_path / "afile").write_text("keep")
    argv = [f"--audit={tmp_path}/exp1", f"--out={tmp_path / 'afile'}"]
    assert "--out " in _refused(report_main, argv, capsys)
    assert (tmp_path / "afile").read_text() == "keep"
