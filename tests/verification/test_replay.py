"""`evpack replay`: a stored run is reproducible, and every difference is named."""

import json
import re
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from packer.verification.replay import compare, line_key
from pipelines import batch
from pipelines.verification import replay
from schemas.prompt_formats import FORMATS
from tests.batch_run import SAMPLES, _parquet, flags, input_lines


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("stored")
    batch.run(flags(SAMPLES / "requests.jsonl", out))
    return out


def _replay(run: Path, out: Path, requests: Path, catalog: Path, *extra: str) -> int:
    return replay.main(
        [
            f"--run={run}",
            f"--input={requests}",
            f"--catalog={catalog}",
            f"--config={SAMPLES / 'config.yaml'}",
            f"--output={out}",
            "--runner=FnApiRunner",
            *extra,
        ]
    )


def _rows(out: Path) -> dict[str, dict]:
    return {r["request_id"]: r for r in _parquet(f"{out}/replay/*.parquet")}


def test_a_run_replays_to_the_same_packets(stored_run: Path, tmp_path: Path) -> None:
    code = _replay(stored_run, tmp_path, SAMPLES / "requests.jsonl", SAMPLES / "catalog.jsonl")
    rows = _rows(tmp_path)
    assert code == 0
    assert len(rows) == len(_parquet(f"{stored_run}/manifests/*.parquet"))
    assert {r["status"] for r in rows.values()} == {"same"}
    assert all(r["stored_prompt_sha256"] == r["replayed_prompt_sha256"] for r in rows.values())


def test_a_changed_catalog_and_a_missing_request_are_reported(
    stored_run: Path, tmp_path: Path
) -> None:
    catalog = tmp_path / "catalog.jsonl"
    docs = [json.loads(line) for line in input_lines(SAMPLES / "catalog.jsonl")]
    for doc in docs:
        if doc["document_id"] == "sso-setup":
            doc["deleted"] = True  # deleted since the run: its blocks must go
    catalog.write_text("".join(json.dumps(d) + "\n" for d in docs))
    lines = input_lines(SAMPLES / "requests.jsonl")
    requests = tmp_path / "requests.jsonl"
    requests.write_text("\n".join(line for line in lines if '"acme-q00"' not in line) + "\n")
    assert _replay(stored_run, tmp_path / "out", requests, catalog) == 1
    rows = _rows(tmp_path / "out")
    assert rows["acme-q00"]["status"] == "request_missing"
    stored = {m["request_id"]: m for m in _parquet(f"{stored_run}/manifests/*.parquet")}
    for request_id, row in rows.items():
        used_sso = any(e["document_id"] == "sso-setup" for e in stored[request_id]["evidence"])
        if request_id != "acme-q00" and used_sso:
            assert row["status"] == "prompt_differs", request_id
            assert row["differences"][0] == "prompt_sha256"
            assert "evidence" in row["differences"]


def test_another_config_is_refused_naming_what_contradicts_the_run(
    stored_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = "--prompt_format=openai_batch"
    code = _replay(
        stored_run, tmp_path, SAMPLES / "requests.jsonl", SAMPLES / "catalog.jsonl", extra
    )
    assert code == 2
    assert not (tmp_path / "replay").exists()
    err = capsys.readouterr().err
    assert "prompt format openai_batch (the run's: messages)" in err, err
    assert "model gpt-4-turbo" not in err  # the same model: not named


def test_the_runs_recorded_format_and_model_are_taken_without_flags(tmp_path: Path) -> None:
    """A run packed with --prompt_format and --model replays from its record alone; a flag
    contradicting the record is refused naming it."""
    stored = tmp_path / "stored"
    model = "claude-opus-4-1"  # not the config's models.anthropic_batch
    batch.run(flags(SAMPLES / "requests.jsonl", stored, "--prompt_format=anthropic_batch",
                    f"--model={model}"))  # fmt: skip
    args = (SAMPLES / "requests.jsonl", SAMPLES / "catalog.jsonl")
    assert _replay(stored, tmp_path / "same", *args) == 0
    assert {r["status"] for r in _rows(tmp_path / "same").values()} == {"same"}
    with pytest.raises(ValueError, match=rf"model claude-sonnet-4-5 \(the run's: {model}\)"):
        replay.run(
            [
                f"--run={stored}",
                f"--input={args[0]}",
                f"--catalog={args[1]}",
                f"--config={SAMPLES / 'config.yaml'}",
                f"--output={tmp_path / 'other'}",
                "--model=claude-sonnet-4-5",
            ]
        )


def test_compare_names_the_fields_that_differ(stored_run: Path) -> None:
    from schemas import ManifestRow

    stored = ManifestRow.model_validate(_parquet(f"{stored_run}/manifests/*.parquet")[0])
    assert compare(stored, stored).status == "same"
    other = stored.model_copy(update={"candidates_in": stored.candidates_in + 1})
    assert compare(stored, other).differences == ["candidates_in"]
    assert compare(stored, None, "refused").status == "not_packed"


def _copy(run: Path, to: Path) -> Path:
    shutil.copytree(run, to)
    return to


def _edit_a_figure(run: Path) -> str:
    """Change one digit inside the first stored prompt line; returns the line's key."""
    path = sorted((run / "prompts").glob("*.jsonl"))[0]
    lines = path.read_text(encoding="utf-8").splitlines()
    at = re.search(r"\d", lines[0][lines[0].index("<E1>") :])
    assert at is not None
    i = lines[0].index("<E1>") + at.start()
    lines[0] = lines[0][:i] + str((int(lines[0][i]) + 1) % 10) + lines[0][i + 1 :]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return line_key(lines[0]) or ""


def test_an_edited_prompt_line_is_named_though_its_manifest_matches(
    stored_run: Path, tmp_path: Path
) -> None:
    run = _copy(stored_run, tmp_path / "run")
    key = _edit_a_figure(run)
    code = _replay(run, tmp_path / "out", SAMPLES / "requests.jsonl", SAMPLES / "catalog.jsonl")
    rows = _rows(tmp_path / "out")
    assert code == 1
    assert rows[key]["status"] == "prompt_differs"
    assert rows[key]["differences"] == ["prompt_line"]  # the manifest itself still matches
    assert "the stored prompt line differs from the re-packed one" in rows[key]["detail"]
    assert {r["status"] for k, r in rows.items() if k != key} == {"same"}


def test_edited_exclusions_and_stray_or_repeated_lines_are_named(
    stored_run: Path, tmp_path: Path
) -> None:
    run = _copy(stored_run, tmp_path / "run")
    [excluded] = sorted((run / "exclusions").glob("*.parquet"))
    table = pq.read_table(excluded)
    dropped = table.column("request_id")[0].as_py()
    pq.write_table(table.slice(1), excluded)
    prompts = sorted((run / "prompts").glob("*.jsonl"))[0]
    first = prompts.read_text(encoding="utf-8").splitlines()[0]
    repeated = line_key(first)
    stray = json.loads(first)
    stray["request_id"] = "never-asked"
    with prompts.open("a", encoding="utf-8") as handle:
        handle.write(first + "\n" + json.dumps(stray) + "\n" + "not json\n")
    assert _replay(run, tmp_path / "out", SAMPLES / "requests.jsonl", SAMPLES / "catalog.jsonl")
    rows = _rows(tmp_path / "out")
    assert "exclusions" in rows[dropped]["differences"]
    assert "exclusions differ for 1 evidence ids" in rows[dropped]["detail"]
    assert "2 stored prompt lines for it" in rows[repeated]["detail"]
    assert rows["never-asked"]["status"] == "prompt_differs"
    assert "names 'never-asked', no request of the run" in rows["never-asked"]["detail"]
    assert rows["not json"]["detail"] == "prompt_line: a stored prompt line of no prompt format"


def test_prompt_lines_of_a_provider_format_are_matched_by_their_custom_id(
    tmp_path: Path,
) -> None:
    """Anthropic ids are mapped (hashed when the rules refuse them): the key still finds the
    request."""
    stored = tmp_path / "stored"
    fmt = "--prompt_format=anthropic_batch"
    batch.run(flags(SAMPLES / "requests.jsonl", stored, fmt))
    args = (SAMPLES / "requests.jsonl", SAMPLES / "catalog.jsonl", fmt)
    assert _replay(stored, tmp_path / "same", *args) == 0
    key = _edit_a_figure(stored)
    assert _replay(stored, tmp_path / "edited", *args) == 1
    edited = [r for r in _rows(tmp_path / "edited").values() if r["status"] != "same"]
    assert [
        (r["differences"], FORMATS["anthropic_batch"].request_key(r["request_id"])) for r in edited
    ] == [(["prompt_line"], key)]


def test_a_folder_changed_after_its_commit_is_named_against_the_run_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A whole output deleted would otherwise look like one sent elsewhere."""
    run_dir = tmp_path / "run"
    batch.run(flags(SAMPLES / "requests.jsonl", run_dir))
    args = (SAMPLES / "requests.jsonl", SAMPLES / "catalog.jsonl")
    assert _replay(run_dir, tmp_path / "same", *args) == 0
    assert ".run.json)" not in capsys.readouterr().out
    [counts] = (run_dir / "exclusion_counts").glob("*.parquet")
    counts.write_bytes(counts.read_bytes() + b"x")
    assert _replay(run_dir, tmp_path / "edited", *args) == 1
    size = counts.stat().st_size
    expected = f"{counts.relative_to(run_dir)} is {size} bytes, the run wrote {size - 1}"
    assert expected in capsys.readouterr().out
    # a file missing is refused before the replay (tests/test_whole_runs.py)
    shutil.rmtree(run_dir / "prompts")
    assert _replay(run_dir, tmp_path / "gone", *args) == 1
    assert "prompts/prompts-00000-of-00001.jsonl is missing" in capsys.readouterr().err
