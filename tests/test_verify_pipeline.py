"""`evpack verify` end to end: a real batch run, answers in a batch API's result format,
verification rows read back from Parquet."""

import glob
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from packer.answers import parse_prompt_line
from packer.claims import split_sentences
from pipelines import verify
from tests.batch_run import SAMPLES, _parquet, flags, run_test_pipeline


@pytest.fixture(scope="module")
def vertex_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("vertex-run")
    run_test_pipeline(flags(SAMPLES / "requests.jsonl", out, "--prompt_format=vertex_batch"))
    return out


def _vertex_result(line: str, text: str | None) -> dict:
    request = json.loads(line)["request"]
    if text is None:
        return {"status": "RESOURCE_EXHAUSTED: quota", "processed_time": "", "request": request}
    parts = [{"text": text}]
    return {
        "status": "",
        "processed_time": "2026-11-15T12:00:00Z",
        "request": request,
        "response": {"candidates": [{"content": {"role": "model", "parts": parts}}]},
    }


def _good_answer(blocks: dict[str, str], manifest: dict) -> str:
    """A sentence of every block, cited; unavailable facets said to be so."""
    sentences = [
        f"{split_sentences(text)[0].rstrip('.')} [{label}]." for label, text in blocks.items()
    ]
    sentences += [f"The sources do not cover {f}." for f in manifest["uncovered_facets"]]
    return " ".join(sentences) or "The sources do not contain the answer."


def test_verify_rows_for_every_answer(vertex_run: Path, tmp_path: Path) -> None:
    manifests = {m["request_id"]: m for m in _parquet(f"{vertex_run}/manifests/*.parquet")}
    prompt_lines = [
        line
        for f in sorted(glob.glob(f"{vertex_run}/prompts/*.jsonl"))
        for line in Path(f).read_text().splitlines()
    ]
    results = []
    expected: dict[str, bool | None] = {}
    for i, line in enumerate(sorted(prompt_lines)):
        prompt = parse_prompt_line(line)
        manifest = manifests[prompt.key]
        if i % 5 == 4:
            results.append(_vertex_result(line, None))
            expected[prompt.key] = None
            continue
        answer = _good_answer(prompt.blocks, manifest)
        if i % 5 == 1 and prompt.blocks:
            answer += " It cost 987,654 dollars [E1]."
            expected[prompt.key] = False
        else:
            expected[prompt.key] = True
        results.append(_vertex_result(line, answer))
    answers = tmp_path / "predictions.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in results) + "{broken\n")
    summary = verify.run(
        [
            f"--answers={answers}",
            f"--run={vertex_run}",
            f"--requests={SAMPLES / 'requests.jsonl'}",
            f"--output={tmp_path / 'verified'}",
            "--runner=FnApiRunner",
        ]
    )
    rows = [
        r
        for f in glob.glob(f"{tmp_path}/verified/verifications/*.parquet")
        for r in pq.read_table(f).to_pylist()
    ]
    assert len(rows) == len(results)
    by_id = {r["request_id"]: r for r in rows}
    assert {k: by_id[k]["passed"] for k in expected} == expected
    for request_id, passed in expected.items():
        row = by_id[request_id]
        if passed is None:
            assert row["status"] == "errored" and row["error"].startswith("RESOURCE_EXHAUSTED")
        elif passed is False:
            assert row["failed_checks"] == ["figures_supported"]
            failed = next(c for c in row["checks"] if c["name"] == "figures_supported")
            assert failed["offending"] == ["987,654"]
        assert row["tenant_id"] == manifests[request_id]["tenant_id"]
    dead = Path(glob.glob(f"{tmp_path}/verified/verify_dead_letters/*.jsonl")[0]).read_text()
    assert json.loads(dead)["stage"] == "answer"
    assert f"{len(results)} answers" in summary


def test_the_sample_answers_give_one_row_each(tmp_path: Path) -> None:
    """The demo's hand-written Anthropic results: every line a row, failures kept."""
    run = tmp_path / "run"
    run_test_pipeline(
        [
            *flags(SAMPLES / "requests.jsonl", run, "--prompt_format=anthropic_batch"),
            "--event_time=2026-07-01T00:00:00Z",
        ]
    )
    answers = SAMPLES / "answers_anthropic_good_and_bad.jsonl"
    verify.run(
        [
            f"--answers={answers}",
            f"--run={run}",
            f"--requests={SAMPLES / 'requests.jsonl'}",
            "--runner=FnApiRunner",
        ]
    )
    rows = {r["answer_key"]: r for r in _parquet(f"{run}/verifications/*.parquet")}
    assert len(rows) == len(answers.read_text().splitlines())
    assert rows["acme-q03"]["status"] == "errored"
    assert rows["globex-q02"]["status"] == "expired"
    assert rows["globex-q99"]["status"] == "unknown_request"
    assert rows["acme-q00"]["passed"] and not rows["acme-q02"]["passed"]


@pytest.mark.emulators
def test_rows_go_to_bigquery_too(gcp_emulators, vertex_run: Path, tmp_path: Path) -> None:
    from transforms.io.bigquery import bigquery_client

    line = next(
        line
        for f in sorted(glob.glob(f"{vertex_run}/prompts/*.jsonl"))
        for line in Path(f).read_text().splitlines()
    )
    answers = tmp_path / "predictions.jsonl"
    answers.write_text(json.dumps(_vertex_result(line, "No figures here.")) + "\n")
    dataset = f"{gcp_emulators.project}.verify_rows"
    verify.run(
        [
            f"--answers={answers}",
            f"--run={vertex_run}",
            f"--output={tmp_path / 'verified'}",
            f"--bigquery_dataset={dataset}",
            "--runner=FnApiRunner",
        ]
    )
    client = bigquery_client(gcp_emulators.project)
    rows = list(client.query(f"SELECT request_id, status, passed FROM `{dataset}.verifications`"))
    assert [(r["request_id"], r["status"]) for r in rows] == [
        (parse_prompt_line(line).key, "succeeded")
    ]
