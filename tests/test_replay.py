"""`evpack replay`: a stored run is reproducible, and every difference is named."""

import json
from pathlib import Path

import pytest

from packer.replay import compare
from pipelines import replay
from tests.batch_run import SAMPLES, _parquet, flags, input_lines, run_test_pipeline


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("stored")
    run_test_pipeline(flags(SAMPLES / "requests.jsonl", out))
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


def test_another_config_is_refused(stored_run: Path, tmp_path: Path) -> None:
    extra = "--prompt_format=openai_batch"
    code = _replay(
        stored_run, tmp_path, SAMPLES / "requests.jsonl", SAMPLES / "catalog.jsonl", extra
    )
    assert code == 2
    assert not (tmp_path / "replay").exists()


def test_compare_names_the_fields_that_differ(stored_run: Path) -> None:
    from schemas import ManifestRow

    stored = ManifestRow.model_validate(_parquet(f"{stored_run}/manifests/*.parquet")[0])
    assert compare(stored, stored).status == "same"
    other = stored.model_copy(update={"candidates_in": stored.candidates_in + 1})
    assert compare(stored, other).differences == ["candidates_in"]
    assert compare(stored, None, "refused").status == "not_packed"
