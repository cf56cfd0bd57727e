"""Answers and prompts read back: the batch APIs' result lines, and our prompt lines.

Result lines, as each provider documents them:

- OpenAI Batch output: `{id, custom_id, response: {status_code, request_id,
  body: <chat completion>}, error}`; the answer is
  `body.choices[0].message.content`. An `error`, or a status code other than
  200, is an `errored` answer.
- Anthropic Message Batches results (`.jsonl`): `{custom_id, result: {type:
  succeeded, message: {content: [{type: text, text}]}}}`, or a result of type
  `errored` (with `error`), `canceled` or `expired`.
- Vertex AI batch prediction output: `{status, processed_time, request,
  response: {candidates: [{content: {parts: [{text}]}}]}}`; a non-empty
  `status` is an error. The request id is the `labels.request_id` of the
  echoed request (`packer.formats`).
- Amazon Bedrock batch inference output (`<input>.jsonl.out`): `{recordId,
  modelInput, modelOutput}`, `modelOutput` being the InvokeModel response
  body (for Anthropic models a Messages API message: `content: [{type: text,
  text}]`; for a Converse job a Converse response: `output: {message:
  {content: [{text}]}}`, each block carrying every member of the content
  union, the others null), or `{recordId, modelInput, error: {errorCode,
  errorMessage}}`.
- Plain: `{request_id, answer}`.

Each line's format is told from its keys, so one answers file may mix them.
A line that is none of these raises `AnswerError` (a dead letter upstream).

A result the API calls a success but that holds no text (Anthropic `content:
[]` or only non-text blocks, also from Bedrock; a Converse message without a
text block; an OpenAI message whose `content` is null, with or without a
`refusal`; a Vertex candidate without parts) is `no_content`,
with the stop or finish reason as its error: an API outcome like `errored`,
not an empty answer that checks could pass. A text that is present but blank
is an answer, and fails the `answered` check.
"""

import json
from dataclasses import dataclass
from typing import Any

from packer.formats import VERTEX_ID_LABEL
from packer.layout import parse_blocks

AnswerFormat = str  # "plain" or a PromptFormat: "openai_batch", "bedrock_converse_batch", ...


class AnswerError(ValueError):
    """A line that is not an answer in any known result format."""


@dataclass(frozen=True)
class Answer:
    """One model answer (or the API's failure to give one), keyed as its line names it."""

    key: str
    answer_format: AnswerFormat
    status: str  # succeeded, errored, canceled, expired, no_content
    text: str
    error: str | None
    file: str | None = None
    """The answers file and 1-based line the answer was read from, when read from a file."""
    line: int | None = None


def _no_content(key: str, answer_format: AnswerFormat, why: Any) -> Answer:
    return Answer(key, answer_format, "no_content", "", f"no text in the result ({why})")


def _object(line: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as err:
        raise AnswerError(f"{what} is not valid JSON: {err.msg} at column {err.colno}") from err
    if not isinstance(value, dict):
        raise AnswerError(f"{what} is not a JSON object")
    return value


def _key(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise AnswerError(f"result line without a {field}")
    return value


def _openai(line: dict[str, Any]) -> Answer:
    key = _key(line.get("custom_id"), "custom_id")
    response = line.get("response") or {}
    body = response.get("body") or {}
    if line.get("error"):
        return Answer(key, "openai_batch", "errored", "", _message(line["error"]))
    if response.get("status_code") != 200:
        error = _message(body.get("error")) or f"status code {response.get('status_code')}"
        return Answer(key, "openai_batch", "errored", "", error)
    try:
        choice = body["choices"][0]
        message = choice["message"]
        content = message.get("content")
    except (KeyError, IndexError, TypeError, AttributeError) as err:
        raise AnswerError("OpenAI result without choices[0].message") from err
    if content is None:
        why = message.get("refusal") or f"finish_reason {choice.get('finish_reason')}"
        return _no_content(key, "openai_batch", why)
    return Answer(key, "openai_batch", "succeeded", str(content), None)


def _anthropic(line: dict[str, Any]) -> Answer:
    key = _key(line.get("custom_id"), "custom_id")
    result = line.get("result")
    if not isinstance(result, dict) or result.get("type") not in {
        "succeeded",
        "errored",
        "canceled",
        "expired",
    }:
        raise AnswerError("Anthropic result without a result type")
    kind = result["type"]
    if kind != "succeeded":
        error = _message(result.get("error")) or kind
        return Answer(key, "anthropic_batch", kind, "", error)
    message = result.get("message")
    why = f"stop_reason {message.get('stop_reason')}" if isinstance(message, dict) else ""
    return _text_answer(key, "anthropic_batch", _message_texts(message), why)


def _message_texts(message: Any) -> list[str]:
    """The text blocks of an Anthropic Messages API response (none: only tool use, or
    `content: []`)."""
    if not isinstance(message, dict) or not isinstance(message.get("content") or [], list):
        raise AnswerError("Anthropic message that is not {content: [...]}")
    return [
        b["text"]
        for b in message.get("content") or []
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]


def _text_answer(key: str, answer_format: AnswerFormat, texts: list[str], why: str) -> Answer:
    """A success with its text blocks joined, or `no_content` (with `why`) without any."""
    if not texts:
        return _no_content(key, answer_format, why)
    return Answer(key, answer_format, "succeeded", "".join(texts), None)


def _bedrock(line: dict[str, Any]) -> Answer:
    """A Bedrock output line; the job was of type Converse when the echoed input is no
    Anthropic InvokeModel body (which always names its `anthropic_version`)."""
    key = _key(line.get("recordId"), "recordId")
    echoed = line.get("modelInput")
    converse = isinstance(echoed, dict) and "anthropic_version" not in echoed
    fmt = "bedrock_converse_batch" if converse else "bedrock_batch"
    if line.get("error"):
        error = line["error"]
        if isinstance(error, dict) and "errorMessage" in error:
            error = f"{error.get('errorCode', 'error')}: {error['errorMessage']}"
        return Answer(key, fmt, "errored", "", _message(error))
    output = line.get("modelOutput")
    if not converse and isinstance(output, dict) and isinstance(output.get("content"), list):
        why = f"stop_reason {output.get('stop_reason')}"
        return _text_answer(key, fmt, _message_texts(output), why)
    message = (output.get("output") or {}).get("message") if isinstance(output, dict) else None
    if (
        not converse
        or not isinstance(message, dict)
        or not isinstance(message.get("content"), list)
    ):
        raise AnswerError(
            "Bedrock result whose modelOutput is neither the Anthropic message nor the Converse "
            "response its modelInput asked for"
        )
    texts = [
        b["text"]
        for b in message["content"]
        if isinstance(b, dict) and isinstance(b.get("text"), str)
    ]
    return _text_answer(key, fmt, texts, f"stopReason {output.get('stopReason')}")


def _block_text(block: Any) -> str:
    """The text of a Converse content block (one with `text` set; the union's others are null)."""
    text = block.get("text") if isinstance(block, dict) else None
    return text if isinstance(text, str) else ""


def _vertex(line: dict[str, Any]) -> Answer:
    labels = (line.get("request") or {}).get("labels") or {}
    key = _key(labels.get(VERTEX_ID_LABEL), f"request.labels.{VERTEX_ID_LABEL}")
    status = line.get("status")
    if status:
        return Answer(key, "vertex_batch", "errored", "", _message(status))
    candidates = (line.get("response") or {}).get("candidates") or []
    if not candidates:
        feedback = (line.get("response") or {}).get("promptFeedback")
        return Answer(key, "vertex_batch", "errored", "", _message(feedback) or "no candidates")
    parts = (candidates[0].get("content") or {}).get("parts") or []
    texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
    if not texts:
        return _no_content(key, "vertex_batch", f"finishReason {candidates[0].get('finishReason')}")
    return Answer(key, "vertex_batch", "succeeded", "".join(texts), None)


def _plain(line: dict[str, Any]) -> Answer:
    key = _key(line.get("request_id"), "request_id")
    answer = line.get("answer")
    if not isinstance(answer, str):
        raise AnswerError("plain answer line whose answer is not a string")
    return Answer(key, "plain", "succeeded", answer, None)


def _message(error: Any) -> str | None:
    """A readable error from the nested error objects the APIs return."""
    if error is None or error == "":
        return None
    if isinstance(error, dict):
        inner = error.get("error")
        if isinstance(inner, dict):
            return _message(inner)
        message = error.get("message")
        kind = error.get("type") or error.get("code")
        if message:
            return f"{kind}: {message}" if kind else str(message)
    return json.dumps(error, sort_keys=True) if not isinstance(error, str) else error


def parse_answer_line(line: str) -> Answer:
    """One result line of any supported format."""
    value = _object(line, "answer line")
    if "custom_id" in value and "result" in value:
        return _anthropic(value)
    if "custom_id" in value:
        return _openai(value)
    if "request" in value and ("response" in value or "status" in value):
        return _vertex(value)
    if "recordId" in value and ("modelOutput" in value or "error" in value):
        return _bedrock(value)
    if "request_id" in value and "answer" in value:
        return _plain(value)
    raise AnswerError(
        "not an OpenAI, Anthropic, Vertex or Bedrock batch result, nor a {request_id, answer} line"
    )


@dataclass(frozen=True)
class PromptText:
    """A prompt line read back: its key and the evidence blocks by label."""

    key: str
    blocks: dict[str, str]


def _user_text(value: dict[str, Any]) -> tuple[str, str]:
    if "messages" in value and "request_id" in value:
        return value["request_id"], "".join(
            m["content"] for m in value["messages"] if m.get("role") == "user"
        )
    if "body" in value:
        messages = value["body"]["messages"]
        return value["custom_id"], "".join(m["content"] for m in messages if m["role"] == "user")
    if "params" in value:
        return value["custom_id"], "".join(m["content"] for m in value["params"]["messages"])
    if "modelInput" in value:
        messages = value["modelInput"]["messages"]
        return value["recordId"], "".join(
            m["content"]
            if isinstance(m["content"], str)
            else "".join(map(_block_text, m["content"]))
            for m in messages
        )
    request = value["request"]
    return request["labels"][VERTEX_ID_LABEL], "".join(
        p["text"] for c in request["contents"] for p in c["parts"]
    )


def parse_prompt_line(line: str) -> PromptText:
    """A prompt line of any prompt format: the key it names its request by, and its blocks."""
    value = _object(line, "prompt line")
    try:
        key, user = _user_text(value)
    except (KeyError, TypeError) as err:
        raise AnswerError(f"prompt line of no known format (missing {err})") from err
    return PromptText(key, parse_blocks(user))
