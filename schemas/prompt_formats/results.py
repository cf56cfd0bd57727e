"""A model answer read from a batch API's result line, and what every format's reader shares.

A result the API calls a success but that holds no text (Anthropic `content:
[]` or only non-text blocks, also from Bedrock; a Converse message without a
text block; an OpenAI message whose `content` is null, with or without a
`refusal`; a Vertex candidate without parts) is `no_content`, with the stop
or finish reason as its error: an API outcome like `errored`, not an empty
answer that checks could pass. A text that is present but blank is an
answer, and fails the `answered` check.

A result cut off at the output limit (OpenAI's `finish_reason: "length"` or `incomplete_details:
{reason: max_output_tokens}`,
Anthropic's and Bedrock's `max_tokens`, Vertex's `MAX_TOKENS`) is `truncated`,
whatever text it holds: its own outcome, never checked (a cut answer would
fail `answered` or a citation check for the wrong reason). Every reader
gives its stop reason to `text_answer`, the one place it is read, and the
answer keeps it as written (`stop_reason`, a column of the verification row).
Rejected: checking a truncated text as an answer (a reasoning model that spent
its allowance thinking reads as "the answer has no text").
"""

import json
from dataclasses import dataclass, replace
from typing import Any

AnswerFormat = str  # "plain" or a prompt format's name: "openai_batch", ...


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
    stop_reason: str | None = None
    """Why the model stopped, as the result line says (`stop`, `end_turn`, `length`, ...);
    None where the format carries none."""


TRUNCATING = frozenset({"length", "max_tokens", "MAX_TOKENS", "max_output_tokens"})
"""The stop reasons that say the output limit cut the answer off, in every format's
spelling: OpenAI's `length` (its Responses endpoint's `max_output_tokens`), Anthropic's
and Bedrock's (Converse too) `max_tokens`, Vertex's `MAX_TOKENS`."""


def no_content(key: str, answer_format: AnswerFormat, why: Any) -> Answer:
    return Answer(key, answer_format, "no_content", "", f"no text in the result ({why})")


def text_answer(
    key: str, answer_format: AnswerFormat, texts: list[str], field: str, reason: Any
) -> Answer:
    """A result the API calls a success, with the stop reason its `field` holds: `truncated`
    when the output limit cut it off (`TRUNCATING`), else its text blocks joined, else
    `no_content` naming the stop reason."""
    stop = None if reason is None else str(reason)
    text = "".join(texts)
    if stop in TRUNCATING:
        why = f"cut off at the output limit ({field} {stop})"
        return Answer(key, answer_format, "truncated", text, why, stop_reason=stop)
    if not texts:
        return replace(no_content(key, answer_format, f"{field} {stop}"), stop_reason=stop)
    return Answer(key, answer_format, "succeeded", text, None, stop_reason=stop)


def required_key(value: Any, field: str) -> str:
    """The id a result line names its request by; a line without one is no answer."""
    if not isinstance(value, str) or not value:
        raise AnswerError(f"result line without a {field}")
    return value


def error_text(error: Any) -> str | None:
    """A readable error from the nested error objects the APIs return."""
    if error is None or error == "":
        return None
    if isinstance(error, dict):
        inner = error.get("error")
        if isinstance(inner, dict):
            return error_text(inner)
        message = error.get("message")
        kind = error.get("type") or error.get("code")
        if message:
            return f"{kind}: {message}" if kind else str(message)
    return json.dumps(error, sort_keys=True) if not isinstance(error, str) else error
