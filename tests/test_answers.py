"""Result lines of each batch API, as documented, read back into answers."""

import json

import pytest

from packer.answers import AnswerError, parse_answer_line, parse_prompt_line
from packer.formats import format_line
from tests.test_formats import PROMPT

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


def test_plain_lines_and_garbage() -> None:
    assert parse_answer_line('{"request_id": "q", "answer": "No."}').text == "No."
    for bad in ("nope", "[1]", '{"custom_id": "q", "result": {"type": "odd"}}', '{"x": 1}'):
        with pytest.raises(AnswerError):
            parse_answer_line(bad)


@pytest.mark.parametrize("fmt", ["messages", "openai_batch", "anthropic_batch", "vertex_batch"])
def test_prompt_lines_of_every_format_give_their_blocks(fmt: str) -> None:
    prompt = parse_prompt_line(format_line(PROMPT, 100, fmt))  # type: ignore[arg-type]
    assert prompt.key == "acme-q00"
    assert prompt.blocks == {"E1": "x & y"}


def test_a_mapped_custom_id_resolves_to_its_request() -> None:
    """Anthropic and Vertex results of a request id their rules refuse find their request."""
    from packer.answers import Answer
    from packer.formats import answer_keys, anthropic_custom_id, vertex_custom_id
    from transforms.verify import _resolve

    request_id = "Acme/Q 1"
    keys = {key: [request_id] for key in answer_keys(request_id)}
    for key in (anthropic_custom_id(request_id), vertex_custom_id(request_id)):
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
