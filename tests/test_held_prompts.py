"""Prompts without evidence: counted in the summary and the run record, and with
`--prompts_without_evidence hold` written to `held_prompts/`, never to the prompts' sink;
their manifests and exclusions are written either way."""

import json
from pathlib import Path

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.batch import main as batch_main
from pipelines.batch import run
from pipelines.options.sinks import resolve_sinks
from pipelines.verification import replay, verify
from tests.batch_run import SAMPLES, _jsonl, _parquet, flags
from tests.stream_harness import Routes, drain


def _requests(tmp_path: Path) -> Path:
    """The first sample request as it is, and a copy whose every candidate names a document
    the catalog does not know (all excluded: a prompt without evidence)."""
    first = json.loads((SAMPLES / "requests.jsonl").read_text().splitlines()[0])
    empty = {
        **first,
        "request_id": "empty-q",
        "candidates": [
            {**c, "document_id": f"gone-{k}"} for k, c in enumerate(first["candidates"])
        ],
    }
    path = tmp_path / "requests.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (first, empty)) + "\n")
    return path


def _ids(rows: list[dict]) -> set[str]:
    return {row["request_id"] for row in rows}


def test_a_held_prompt_is_written_apart_with_its_audit_rows(tmp_path: Path) -> None:
    out = tmp_path / "run"
    finished = run(flags(_requests(tmp_path), out, "--prompts_without_evidence=hold"))
    held = _jsonl(str(out / "held_prompts" / "held_prompts-*.jsonl"))
    assert _ids(held) == {"empty-q"}
    assert _ids(_jsonl(str(out / "prompts" / "prompts-*.jsonl"))) == {"acme-q00"}
    manifests = {m["request_id"]: m for m in _parquet(str(out / "manifests" / "*.parquet"))}
    assert manifests.keys() == {"acme-q00", "empty-q"} and not manifests["empty-q"]["evidence"]
    reasons = {x["reason"] for x in _parquet(str(out / "exclusions" / "*.parquet"))
               if x["request_id"] == "empty-q"}  # fmt: skip
    assert reasons == {"unknown_document"}
    [record] = _jsonl(str(out / "runs" / "runs-*.jsonl"))
    assert (record["without_evidence"], record["prompts_without_evidence"]) == ("hold", 1)
    summary = finished.summary
    assert (summary.prompts_without_evidence, summary.prompts_held) == (1, 1)
    assert any("1 held in held_prompts/, not sent" in alert for alert in summary.alerts)


def test_by_default_a_prompt_without_evidence_is_sent_and_counted(tmp_path: Path) -> None:
    out = tmp_path / "run"
    finished = run(flags(_requests(tmp_path), out))
    assert _ids(_jsonl(str(out / "prompts" / "prompts-*.jsonl"))) == {"acme-q00", "empty-q"}
    assert not (out / "held_prompts").exists()
    [record] = _jsonl(str(out / "runs" / "runs-*.jsonl"))
    assert (record["without_evidence"], record["prompts_without_evidence"]) == ("send", 1)
    assert finished.summary.prompts_held == 0
    assert any("--prompts_without_evidence hold" in alert for alert in finished.summary.alerts)


def test_holding_needs_a_folder_to_hold_them_in() -> None:
    options = PipelineOptions(
        [
            "--bigquery_dataset=p.d",
            "--prompts_topic=projects/p/topics/prompts",
            "--prompts_without_evidence=hold",
        ]
    )
    with pytest.raises(ValueError, match="held_prompts/ under --output"):
        resolve_sinks(options)


def test_a_held_prompt_is_never_published(gcp_emulators, tmp_path: Path) -> None:
    """With `--prompts_topic` (the real emulator): the prompt with evidence is staged and
    delivered once the run is committed; the held one is neither staged nor published."""
    routes = Routes(gcp_emulators.project, "held-prompts")
    routes.create()
    argv = flags(
        _requests(tmp_path), tmp_path / "run", f"--prompts_topic={routes.topic('prompts')}"
    )
    assert batch_main([*argv, "--prompts_without_evidence=hold"]) == 0
    outbox = _jsonl(str(tmp_path / "run" / "outbox" / "outbox-*.jsonl"))
    assert _ids(outbox) == {"acme-q00"}
    published = drain(routes.subscription("prompts"), 1)
    assert [p.attributes["request_id"] for p in published] == ["acme-q00"]
    assert drain(routes.subscription("prompts"), 0, seconds=3) == []
    assert _ids(_jsonl(str(tmp_path / "run" / "held_prompts" / "*.jsonl"))) == {"empty-q"}


def test_a_run_that_held_prompts_replays_to_the_same_packets(tmp_path: Path) -> None:
    """`evpack replay` reads the held prompt lines too: no held request reads as changed."""
    requests, out = _requests(tmp_path), tmp_path / "run"
    run(flags(requests, out, "--prompts_without_evidence=hold"))
    code = replay.main(
        [
            f"--run={out}",
            f"--input={requests}",
            f"--catalog={SAMPLES / 'catalog.jsonl'}",
            f"--config={SAMPLES / 'config.yaml'}",
            f"--output={tmp_path / 'replayed'}",
            "--runner=FnApiRunner",
        ]
    )
    rows = {r["request_id"]: r["status"] for r in _parquet(f"{tmp_path}/replayed/replay/*.parquet")}
    assert (code, rows) == (0, {"acme-q00": "same", "empty-q": "same"})


def test_answers_to_held_prompts_sent_later_are_verified(tmp_path: Path) -> None:
    """`evpack verify` reads the held prompt lines too, so their answers are checked."""
    out = tmp_path / "run"
    run(flags(_requests(tmp_path), out, "--prompts_without_evidence=hold"))
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        json.dumps({"request_id": "empty-q", "answer": "The sources say nothing about refunds."})
    )
    verify.run([f"--answers={answers}", f"--run={out}", "--runner=FnApiRunner"])
    [row] = _parquet(str(out / "verifications" / "**" / "*.parquet"))
    assert (row["request_id"], row["status"], row["passed"]) == ("empty-q", "succeeded", True)
