"""`evpack verify` end to end: a real batch run, answers in a batch API's result format,
verification rows read back from Parquet."""

import glob
import hashlib
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from packer.verification.answer_sentences import split_sentences
from packer.verification.answers import parse_prompt_line
from pipelines.options import verify as verify_options
from pipelines.verification import verify
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
    outcome = verify.run(
        [
            f"--answers={answers}",
            f"--run={vertex_run}",
            f"--requests={SAMPLES / 'requests.jsonl'}",
            f"--output={tmp_path / 'verified'}",
            "--max_failed=100%",
            "--runner=FnApiRunner",
        ]
    )
    rows = [
        r
        for f in glob.glob(f"{tmp_path}/verified/verifications/predictions/*.parquet")
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
        # A verification belongs to the run it checks: the manifest's run id.
        assert row["run_id"] == manifests[request_id]["run_id"] is not None
    dead = glob.glob(f"{tmp_path}/verified/verify_dead_letters/predictions/*.jsonl")
    letter = json.loads(Path(dead[0]).read_text())
    assert letter["stage"] == "answer" and letter["source"] == f"{answers}:{len(results) + 1}"
    assert f"{len(results)} answers" in outcome.summary and not outcome.gate_exceeded
    texts = {json.dumps(r): r for r in results}
    for row in rows:
        line = Path(row["answer_file"]).read_text().splitlines()[row["answer_line"] - 1]
        parsed = texts[line]
        if parsed["status"] == "":
            text = parsed["response"]["candidates"][0]["content"]["parts"][0]["text"]
            assert row["answer_sha256"] == hashlib.sha256(text.encode()).hexdigest()
        assert not row["duplicate"] and row["answers_for_request"] == 1


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
    rows = {r["answer_key"]: r for r in _parquet(f"{run}/verifications/**/*.parquet")}
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
    rows = list(
        client.query(f"SELECT request_id, status, answer_set FROM `{dataset}.verifications`")
    )
    assert [(r["request_id"], r["status"], r["answer_set"]) for r in rows] == [
        (parse_prompt_line(line).key, "succeeded", "predictions")  # the set: after the file
    ]


def test_a_second_answer_set_goes_beside_the_first_and_the_gate_sets_the_exit_status(
    vertex_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two answers for one request are told apart; `--max_failed` decides the exit status."""
    lines = sorted(
        line
        for f in glob.glob(f"{vertex_run}/prompts/*.jsonl")
        for line in Path(f).read_text().splitlines()
    )
    first, second = lines[0], lines[1]
    uncited = json.dumps(_vertex_result(first, "It is so."))  # evidence packed, nothing cited
    retry = json.dumps(_vertex_result(first, "It is so, as said."))
    (tmp_path / "claude.jsonl").write_text(f"{uncited}\n\n{retry}\n")
    (tmp_path / "gpt.jsonl").write_text(json.dumps(_vertex_result(second, "")) + "\n")
    out = tmp_path / "verified"
    common = [f"--run={vertex_run}", f"--output={out}", "--runner=FnApiRunner"]
    code = verify.main([f"--answers={tmp_path / 'claude.jsonl'}", "--max_failed=1", *common])
    printed = capsys.readouterr().out
    assert code == verify.GATE_EXCEEDED, printed
    unanswered = len(lines) - 1
    assert f"{unanswered} prompts of {len(lines)} had no answer" in printed
    assert "cites_evidence 2" in printed and "EXCEEDED" in printed
    rows = sorted(_parquet(f"{out}/verifications/claude/*.parquet"), key=lambda r: r["answer_line"])
    assert [(r["answer_line"], r["duplicate"], r["answers_for_request"]) for r in rows] == [
        (1, False, 2),
        (3, True, 2),
    ]
    assert rows[0]["answer_sha256"] != rows[1]["answer_sha256"]
    gpt = [f"--answers={tmp_path / 'gpt.jsonl'}", *common]
    assert verify.main([*gpt, "--max_failed=100%"]) == 0  # beside claude/, not refused
    (row,) = _parquet(f"{out}/verifications/gpt/*.parquet")
    assert row["failed_checks"] == ["answered"]
    assert verify.main(gpt) == 2  # the same answer set again needs --overwrite
    assert "--answer_set" in capsys.readouterr().err


def test_failure_limits_and_answer_set_names() -> None:
    assert verify.FailureLimit.parse("0").exceeded(1, 100)
    assert not verify.FailureLimit.parse("3").exceeded(3, 100)
    assert verify.FailureLimit.parse("2%").exceeded(3, 100)
    assert not verify.FailureLimit.parse("2.5%").exceeded(2, 100)
    for bad in ("-1", "x", "150%", "0.5"):
        with pytest.raises(ValueError, match="--max_failed"):
            verify.FailureLimit.parse(bad)
    assert verify_options.answer_set_name("results/*.jsonl") == "results"
    assert verify_options.answer_set_name("gs://b/out/claude-*.jsonl.gz") == "claude"
    assert verify_options.answer_set_name("gs://b/*.jsonl") == "b"
    assert verify_options.answer_set_name("my answers.jsonl") == "my_answers"


def test_a_misspelt_gate_flag_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--answers=a.jsonl", f"--run={tmp_path}", "--max_faild=0"]
    assert verify.main(argv) == 2
    assert "--max_failed" in capsys.readouterr().err
    assert verify.main(["--answers=a.jsonl", f"--run={tmp_path}", "--max_failed=lots"]) == 2
    assert "--max_failed must be" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_answer_lines_keep_their_numbers_compressed_or_not(tmp_path: Path) -> None:
    import gzip

    from packer.parsing.strict_json import Unreadable
    from transforms.verification.verify import numbered_lines

    lines = b'{"a": 1}\n\n  \n{"b": 2}\r\n{"c": 3}'
    plain, packed = tmp_path / "r.jsonl", tmp_path / "r.jsonl.gz"
    plain.write_bytes(lines)
    packed.write_bytes(gzip.compress(lines))
    for path in (plain, packed):
        assert list(numbered_lines(str(path))) == [
            (str(path), 1, b'{"a": 1}'),
            (str(path), 4, b'{"b": 2}'),
            (str(path), 5, b'{"c": 3}'),
        ]
    ((_, number, gone),) = numbered_lines(str(tmp_path / "gone.jsonl"))
    assert isinstance(gone, Unreadable) and number == 1  # a dead letter, not a crash


def test_an_answer_line_over_the_record_limit_is_cut_off_not_held(tmp_path: Path) -> None:
    from packer.parsing.strict_json import Unreadable
    from transforms.verification.verify import numbered_lines

    path = tmp_path / "r.jsonl"
    path.write_bytes(b'{"a": 1}\n' + b"x" * 5000 + b"\n" + b'{"b": 2}\n')
    (first, (_, number, big), last) = numbered_lines(str(path), limit=1000)
    assert first[1:] == (1, b'{"a": 1}') and last[1:] == (3, b'{"b": 2}')
    assert number == 2 and isinstance(big, Unreadable) and "max_record_bytes" in big.reason


@pytest.mark.emulators
def test_a_run_that_sent_its_prompts_to_a_topic_is_verified_from_its_outbox(
    gcp_emulators, tmp_path: Path
) -> None:
    """A batch run with `--prompts_topic` keeps its prompt lines in `outbox/` (no
    `prompts/`): verify reads them there, to the same rows as the run that wrote files."""
    from tests.stream_harness import Routes
    from tests.test_report_browser import ANSWERS

    routes = Routes(gcp_emulators.project, "verify-outbox")
    routes.create()
    fmt = "--prompt_format=anthropic_batch"
    files, sent = tmp_path / "files", tmp_path / "sent"
    run_test_pipeline(flags(SAMPLES / "requests.jsonl", files, fmt))
    from pipelines.batch import run

    run(flags(SAMPLES / "requests.jsonl", sent, fmt, f"--prompts_topic={routes.topic('prompts')}"))
    assert not glob.glob(f"{sent}/prompts/*") and glob.glob(f"{sent}/outbox/*.jsonl")
    verdicts = []
    for folder in (files, sent):
        verify.run([f"--answers={ANSWERS}", f"--run={folder}", "--runner=FnApiRunner"])
        rows = _parquet(f"{folder}/verifications/**/*.parquet")
        verdicts.append(sorted((r["answer_key"], r["status"], r["passed"]) for r in rows))
    assert verdicts[0] == verdicts[1]
    assert any(status == "succeeded" for _, status, _ in verdicts[1])
    # evpack replay reads the staged lines too: each packet the same, and a line changed
    # in the outbox is the one request that differs
    from pipelines.verification import replay

    common = [
        f"--run={sent}",
        f"--input={SAMPLES / 'requests.jsonl'}",
        f"--catalog={SAMPLES / 'catalog.jsonl'}",
        f"--config={SAMPLES / 'config.yaml'}",
        fmt,
        "--runner=FnApiRunner",
        "--overwrite",
    ]
    text, same = replay.run(common)
    assert same and "prompt lines staged for the topic" in text
    (staged,) = glob.glob(f"{sent}/outbox/*.jsonl")
    lines = Path(staged).read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["line"] = first["line"].replace("E1", "E9", 1)
    Path(staged).write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    replay.run(common)
    statuses = {r["request_id"]: r["status"] for r in _parquet(f"{sent}/replay/*.parquet")}
    assert {k for k, v in statuses.items() if v != "same"} == {first["request_id"]}
