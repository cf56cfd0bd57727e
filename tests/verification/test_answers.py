"""Result lines of each batch API, as documented, read back into answers."""

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.verification import result_line
from packer.verification.answers import AnswerError, parse_answer_line, parse_prompt_line
from pipelines.verification import verify
from schemas.prompt_formats import FORMAT_NAMES, FORMATS, answer_keys, format_line
from tests.batch_run import SAMPLES, _parquet, flags, run_test_pipeline
from tests.test_formats import PROMPT, ids

anthropic_custom_id = FORMATS["anthropic_batch"].request_key
vertex_custom_id = FORMATS["vertex_batch"].request_key
bedrock_record_id = FORMATS["bedrock_batch"].request_key

OPENAI_OK = {
    "id": "batch_req_1",
    "custom_id": "q1",
    "response": {
        "status_code": 200,
        "request_id": "req_1",
        "body": {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "Yes [E1]."},
                    "finish_reason": "stop",
                }
            ],
        },
    },
    "error": None,
}


def _line(value: dict) -> str:
    return json.dumps(value)


def test_openai_output_lines() -> None:
    answer = parse_answer_line(_line(OPENAI_OK))
    assert (answer.key, answer.status, answer.text) == ("q1", "succeeded", "Yes [E1].")
    failed = {**OPENAI_OK, "response": None, "error": {"code": "batch_expired", "message": "late"}}
    answer = parse_answer_line(_line(failed))
    assert answer.status == "errored" and answer.error == "batch_expired: late"
    status = {
        **OPENAI_OK,
        "response": {
            "status_code": 400,
            "body": {"error": {"type": "invalid_request_error", "message": "bad"}},
        },
    }
    assert parse_answer_line(_line(status)).error == "invalid_request_error: bad"


def test_anthropic_result_lines() -> None:
    ok = {
        "custom_id": "q1",
        "result": {
            "type": "succeeded",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": "Yes "}, {"type": "text", "text": "[E1]."}],
                "stop_reason": "end_turn",
            },
        },
    }
    assert parse_answer_line(_line(ok)).text == "Yes [E1]."
    errored = {
        "custom_id": "q2",
        "result": {
            "type": "errored",
            "error": {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
        },
    }
    assert parse_answer_line(_line(errored)).error == "overloaded_error: busy"
    for kind in ("canceled", "expired"):
        line = _line({"custom_id": "q3", "result": {"type": kind}})
        assert parse_answer_line(line).status == kind


def test_vertex_output_lines() -> None:
    request = json.loads(format_line(PROMPT, 100, "vertex_batch"))["request"]
    ok = {
        "status": "",
        "processed_time": "2026-11-15T12:00:00.000+00:00",
        "request": request,
        "response": {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": "Yes [E1]."}]},
                    "finishReason": "STOP",
                }
            ],
            "usageMetadata": {"promptTokenCount": 10},
        },
    }
    answer = parse_answer_line(_line(ok))
    assert (answer.key, answer.status, answer.text) == ("acme-q00", "succeeded", "Yes [E1].")
    failed = {"status": "Bad Request: quota", "processed_time": "", "request": request}
    assert parse_answer_line(_line(failed)).status == "errored"


def test_bedrock_output_lines() -> None:
    """Bedrock batch output: the input record echoed, with modelOutput or error."""
    record = json.loads(format_line(PROMPT, 100, "bedrock_batch"))
    ok = {
        **record,
        "modelOutput": {
            "id": "msg_bdrk_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": "Yes "}, {"type": "text", "text": "[E1]."}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 40, "output_tokens": 4},
        },
    }
    answer = parse_answer_line(_line(ok))
    assert (answer.key, answer.answer_format) == (record["recordId"], "bedrock_batch")
    assert (answer.status, answer.text) == ("succeeded", "Yes [E1].")
    failed = {**record, "error": {"errorCode": 400, "errorMessage": "bad request"}}
    answer = parse_answer_line(_line(failed))
    assert (answer.status, answer.error) == ("errored", "400: bad request")
    for bad in ({**record, "modelOutput": {"results": []}}, {"recordId": "", "error": "x"}):
        with pytest.raises(AnswerError):
            parse_answer_line(_line(bad))


@given(request_id=ids, text=st.text(max_size=200), code=st.integers(400, 599))
def test_bedrock_output_of_any_record_reads_back(request_id: str, text: str, code: int) -> None:
    """Whatever the request id and answer, its Bedrock output line names a key of that request
    and carries the answer's text; an error line carries its code and message."""
    prompt = PROMPT.model_copy(update={"request_id": request_id})
    record = json.loads(format_line(prompt, 64, "bedrock_batch"))
    content = [{"type": "text", "text": text[:7]}, {"type": "text", "text": text[7:]}]
    line = {**record, "modelOutput": {"type": "message", "role": "assistant", "content": content}}
    answer = parse_answer_line(json.dumps(line))
    assert answer.key in answer_keys(request_id) and answer.text == text
    error = {**record, "error": {"errorCode": code, "errorMessage": text or "x"}}
    failed = parse_answer_line(json.dumps(error))
    assert failed.key == answer.key and failed.error == f"{code}: {text or 'x'}"


UNION = ("audio", "cachePoint", "document", "image", "reasoningContent", "text", "toolUse", "video")
"""Members of a Converse content block: a batch output block carries all of them, most null."""


def converse_output(*texts: str) -> dict:
    """A Converse response as a batch output's modelOutput, with a reasoning block first."""
    blocks = [{m: None for m in UNION} | {"reasoningContent": {"reasoningText": {"text": "hm"}}}]
    blocks += [{m: None for m in UNION} | {"text": t} for t in texts]
    usage = {"inputTokens": 40, "outputTokens": 4, "totalTokens": 44}
    return {"output": {"message": {"role": "assistant", "content": blocks}}, "usage": usage}


def test_bedrock_converse_output_lines() -> None:
    """A Converse job's output: the text blocks joined, reasoning and null members left out."""
    record = json.loads(format_line(PROMPT, 100, "bedrock_converse_batch"))
    answer = parse_answer_line(_line({**record, "modelOutput": converse_output("Yes ", "[E1].")}))
    assert (answer.key, answer.answer_format) == (record["recordId"], "bedrock_converse_batch")
    assert (answer.status, answer.text) == ("succeeded", "Yes [E1].")
    with pytest.raises(AnswerError):
        parse_answer_line(_line({**record, "modelOutput": {"output": {}}}))


def test_plain_lines_and_garbage() -> None:
    assert parse_answer_line('{"request_id": "q", "answer": "No."}').text == "No."
    for bad in ("nope", "[1]", '{"custom_id": "q", "result": {"type": "odd"}}', '{"x": 1}'):
        with pytest.raises(AnswerError):
            parse_answer_line(bad)


@pytest.mark.parametrize("fmt", FORMAT_NAMES)
def test_prompt_lines_of_every_format_give_their_blocks(fmt: str) -> None:
    prompt = parse_prompt_line(format_line(PROMPT, 100, fmt))  # type: ignore[arg-type]
    assert prompt.key in answer_keys("acme-q00")
    assert prompt.key == FORMATS[fmt].request_key("acme-q00")
    assert prompt.blocks == {"E1": "x & y"}
    assert prompt.prompt_format == fmt  # the report tells a run's format by it


def test_the_report_tells_a_runs_format_from_its_first_prompt_line(tmp_path: Path) -> None:
    from pipelines.report.audit import prompt_format

    assert prompt_format(str(tmp_path)) is None
    (tmp_path / "prompts").mkdir()
    for fmt in FORMAT_NAMES:
        (tmp_path / "prompts" / "prompts-0.jsonl").write_text(format_line(PROMPT, 9, fmt) + "\n")
        assert prompt_format(str(tmp_path)) == fmt
    (tmp_path / "prompts" / "prompts-0.jsonl").write_text('{"neither": 1}\n')
    assert prompt_format(str(tmp_path)) == "unknown"


def test_a_mapped_custom_id_resolves_to_its_request() -> None:
    """Anthropic, Vertex and Bedrock results of a request id their rules refuse find it."""
    from packer.verification.answers import Answer
    from transforms.verification.verify import _resolve

    request_id = "Acme/Q 1"
    keys = {key: [request_id] for key in answer_keys(request_id)}
    mapped = (anthropic_custom_id, vertex_custom_id, bedrock_record_id)
    for key in (to_key(request_id) for to_key in mapped):
        answer = Answer(key, "anthropic_batch", "succeeded", "x", None)
        resolved = list(
            _resolve((key, {"request_ids": keys[key], "answers": [answer], "prompts": []}))
        )
        assert resolved == [(request_id, answer)]
    stray = Answer("h-" + "0" * 32, "anthropic_batch", "succeeded", "x", None)
    (row,) = list(_resolve((stray.key, {"request_ids": [], "answers": [stray], "prompts": []})))
    assert row.value.status == "unknown_request"


def test_a_success_without_text_is_its_own_outcome_not_an_empty_answer() -> None:
    anthropic = {
        "custom_id": "q1",
        "result": {
            "type": "succeeded",
            "message": {"content": [], "stop_reason": "refusal"},
        },
    }
    answer = parse_answer_line(_line(anthropic))
    assert (answer.status, answer.text) == ("no_content", "")
    assert "refusal" in (answer.error or "")
    tool_only = {**anthropic, "result": {"type": "succeeded", "message": {"content": [
        {"type": "tool_use", "id": "t", "name": "x", "input": {}}
    ]}}}  # fmt: skip
    assert parse_answer_line(_line(tool_only)).status == "no_content"
    refused = json.loads(json.dumps(OPENAI_OK))
    refused["response"]["body"]["choices"][0]["message"] = {
        "role": "assistant",
        "content": None,
        "refusal": "I can't help with that.",
    }
    answer = parse_answer_line(_line(refused))
    assert answer.status == "no_content" and "can't help" in (answer.error or "")
    request = json.loads(format_line(PROMPT, 100, "vertex_batch"))["request"]
    blocked = {
        "status": "",
        "request": request,
        "response": {"candidates": [{"finishReason": "SAFETY"}]},
    }
    answer = parse_answer_line(_line(blocked))
    assert answer.status == "no_content" and "SAFETY" in (answer.error or "")


def test_a_blank_text_is_an_answer_that_the_checks_then_fail() -> None:
    blank = json.loads(json.dumps(OPENAI_OK))
    blank["response"]["body"]["choices"][0]["message"]["content"] = "  "
    assert parse_answer_line(_line(blank)).status == "succeeded"
    assert parse_answer_line('{"request_id": "q", "answer": ""}').status == "succeeded"


def test_a_message_that_is_not_an_object_is_refused() -> None:
    line = {"custom_id": "q", "result": {"type": "succeeded", "message": "text"}}
    with pytest.raises(AnswerError):
        parse_answer_line(_line(line))


@pytest.mark.parametrize(
    ("fmt", "model"),
    [
        ("bedrock_batch", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ("bedrock_converse_batch", "us.amazon.nova-pro-v1:0"),
    ],
)
def test_a_bedrock_run_verifies_end_to_end(tmp_path: Path, fmt: str, model: str) -> None:
    """A real batch run in each Bedrock format, its records answered as Bedrock writes its
    `.jsonl.out` (input echoed), and `evpack verify` finding every request by its recordId."""
    run = tmp_path / "run"
    run_test_pipeline(flags(SAMPLES / "requests.jsonl", run, f"--prompt_format={fmt}"))
    manifests = {m["request_id"]: m for m in _parquet(f"{run}/manifests/*.parquet")}
    assert {m["model"] for m in manifests.values()} == {model}
    records = [
        json.loads(line)
        for f in sorted(run.glob("prompts/*.jsonl"))
        for line in Path(f).read_text().splitlines()
    ]
    by_key = {bedrock_record_id(request_id): request_id for request_id in manifests}
    assert {r["recordId"] for r in records} == set(by_key)
    out = []
    for i, record in enumerate(records):
        if i == 0:
            out.append({**record, "error": {"errorCode": 429, "errorMessage": "throttled"}})
            continue
        labels = parse_prompt_line(json.dumps(record)).blocks
        text = " ".join(f"See [{label}]." for label in labels) or "No sources."
        message = {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
        }
        output = message if fmt == "bedrock_batch" else converse_output(text)
        out.append({**record, "modelOutput": output})
    answers = tmp_path / "input.jsonl.out"
    answers.write_text("".join(json.dumps(r) + "\n" for r in out))
    verify.run(
        [
            f"--answers={answers}",
            f"--run={run}",
            f"--requests={SAMPLES / 'requests.jsonl'}",
            "--runner=FnApiRunner",
        ]
    )
    rows = _parquet(f"{run}/verifications/input/*.parquet")  # the answer set "input"
    assert sorted(r["request_id"] for r in rows) == sorted(by_key[r["recordId"]] for r in records)
    assert {r["answer_format"] for r in rows} == {fmt}
    errored = [r for r in rows if r["status"] == "errored"]
    assert [(r["request_id"], r["error"]) for r in errored] == [
        (by_key[records[0]["recordId"]], "429: throttled")
    ]
    assert all(r["status"] == "succeeded" for r in rows if r not in errored)


def test_a_bedrock_success_without_text_is_no_content() -> None:
    anthropic = {
        "recordId": "q1",
        "modelInput": {"anthropic_version": "bedrock-2023-05-31", "messages": []},
        "modelOutput": {"type": "message", "content": [], "stop_reason": "refusal"},
    }
    answer = parse_answer_line(_line(anthropic))
    assert (answer.answer_format, answer.status) == ("bedrock_batch", "no_content")
    assert "refusal" in (answer.error or "")
    converse = {
        "recordId": "q1",
        "modelInput": {"messages": []},
        "modelOutput": converse_output(),  # a reasoning block, no text
    }
    answer = parse_answer_line(_line(converse))
    assert (answer.answer_format, answer.status) == ("bedrock_converse_batch", "no_content")
    assert parse_answer_line(_line({**converse, "modelOutput": converse_output(" ")})).text == " "


@given(
    fmt=st.sampled_from([f for f in FORMAT_NAMES if f != "messages"]),
    request_id=ids,
    text=st.text(min_size=1, max_size=40),
)
def test_a_result_line_reads_back_to_its_format_key_and_text(
    fmt: str, request_id: str, text: str
) -> None:
    """Whatever the request id (mapped or kept) and text, each format's own reader takes
    its API's result line: the key is the format's id for the request, the text intact."""
    line = result_line(fmt, request_id, text)
    assert line is not None
    answer = parse_answer_line(line)
    assert answer.answer_format == fmt and answer.text == text
    assert answer.key == FORMATS[fmt].request_key(request_id)


OPENAI_RESPONSE = {
    "id": "batch_req_2",
    "custom_id": "q1",
    "response": {
        "status_code": 200,
        "request_id": "req_2",
        "body": {
            "id": "resp_1",
            "object": "response",
            "status": "completed",
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {"type": "output_text", "text": "Yes ", "annotations": []},
                        {"type": "output_text", "text": "[E1].", "annotations": []},
                    ],
                },
            ],
        },
    },
    "error": None,
}


def test_openai_responses_output_lines() -> None:
    """A Responses endpoint batch's output: the text of the message's output_text parts,
    reasoning items left out; a refusal is `no_content` with its reason, a response the
    output limit cut off (`max_output_tokens`, here all spent reasoning) `truncated`; the
    error envelope is the chat endpoint's."""
    answer = parse_answer_line(_line(OPENAI_RESPONSE))
    assert (answer.answer_format, answer.key, answer.status, answer.text) == (
        "openai_responses_batch",
        "q1",
        "succeeded",
        "Yes [E1].",
    )
    body = OPENAI_RESPONSE["response"]["body"]  # type: ignore[index]
    refused = {"type": "message", "content": [{"type": "refusal", "refusal": "I can't."}]}
    incomplete = {
        **body,
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [body["output"][0]],
    }
    cases = (
        ({**body, "output": [refused]}, "no_content", "I can't."),
        (incomplete, "truncated", "max_output"),
    )
    for changed, status, why in cases:
        line = {**OPENAI_RESPONSE, "response": {"status_code": 200, "body": changed}}
        answer = parse_answer_line(_line(line))
        assert answer.status == status and why in (answer.error or "")
    with pytest.raises(AnswerError):
        bad = {**OPENAI_RESPONSE, "response": {"status_code": 200, "body": {"object": "response"}}}
        parse_answer_line(_line(bad))
    assert parse_answer_line(_line(OPENAI_OK)).answer_format == "openai_batch"


def _stopped(fmt: str, text: str, reason: str | None, request_id: str = "q1") -> str:
    """A result line of `fmt` whose model stopped for `reason`, where its format says why."""
    value = json.loads(result_line(fmt, request_id, text) or "{}")
    if fmt == "openai_batch":
        value["response"]["body"]["choices"][0]["finish_reason"] = reason
    elif fmt == "anthropic_batch":
        value["result"]["message"]["stop_reason"] = reason
    elif fmt == "vertex_batch":
        value["response"]["candidates"][0]["finishReason"] = reason
    elif fmt == "bedrock_batch":
        value["modelOutput"]["stop_reason"] = reason
    else:
        value["modelOutput"]["stopReason"] = reason
    return json.dumps(value)


CUT_OFF = {
    "openai_batch": ("length", "stop"),
    "anthropic_batch": ("max_tokens", "end_turn"),
    "vertex_batch": ("MAX_TOKENS", "STOP"),
    "bedrock_batch": ("max_tokens", "end_turn"),
    "bedrock_converse_batch": ("max_tokens", "end_turn"),
}
"""Each result format's stop reason for an answer the output limit cut off, and for one
the model finished."""


@pytest.mark.parametrize("fmt", sorted(CUT_OFF))
def test_an_answer_cut_off_at_the_output_limit_is_truncated_with_its_stop_reason(
    fmt: str,
) -> None:
    cut, done = CUT_OFF[fmt]
    answer = parse_answer_line(_stopped(fmt, "The refund window is", cut))
    assert (answer.status, answer.stop_reason, answer.text) == (
        "truncated",
        cut,
        "The refund window is",
    )
    assert answer.error is not None and cut in answer.error and "output limit" in answer.error
    finished = parse_answer_line(_stopped(fmt, "Yes [E1].", done))
    assert (finished.status, finished.stop_reason, finished.error) == ("succeeded", done, None)
    assert parse_answer_line(_stopped(fmt, "", cut)).status == "truncated"  # all spent thinking


def test_a_truncated_answer_is_its_own_outcome_in_the_rows_the_summary_and_the_gate(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    run_test_pipeline(flags(SAMPLES / "requests.jsonl", run, "--prompt_format=openai_batch"))
    keys = sorted(
        parse_prompt_line(line).key
        for f in sorted(run.glob("prompts/*.jsonl"))
        for line in f.read_text(encoding="utf-8").splitlines()
    )
    abstain = "The sources do not contain the answer."
    lines = [_stopped("openai_batch", abstain, "stop", key) for key in keys[1:]]
    lines.append(_stopped("openai_batch", "Refunds are due within", "length", keys[0]))
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    argv = [f"--answers={answers}", f"--run={run}", "--runner=FnApiRunner"]
    held = verify.run([*argv, "--max_failed=100%"])
    rows = _parquet(f"{run}/verifications/answers/*.parquet")
    (cut,) = [r for r in rows if r["status"] == "truncated"]
    assert (cut["stop_reason"], cut["passed"], cut["failed_checks"]) == ("length", None, [])
    assert {r["stop_reason"] for r in rows if r is not cut} == {"stop"}
    assert "truncated 1" in held.summary and not held.gate_exceeded
    failing = [r for r in rows if not r["passed"]]
    gate = verify.run([*argv, "--overwrite", f"--max_failed={len(failing) - 1}"])
    assert gate.gate_exceeded  # the truncated answer is one of the failures counted
