"""`anthropic_batch`: one request of an Anthropic Message Batch.

Input: one element of the `requests` list, `{custom_id, params: {model,
max_tokens, system, messages}}`, the system contract apart from the messages
as the Messages API wants it. `custom_id` must match `^[a-zA-Z0-9_-]{1,64}$`.
Output (`.jsonl` results): `{custom_id, result: {type: succeeded, message:
{content: [{type: text, text}]}}}`, or a result of type `errored` (with
`error`), `canceled` or `expired`. The Messages parameters and the message
read back are shared with `bedrock_batch`, whose body is the same API's.

Valid under API version 2026-10-21 (Python SDK 2.x), which refuses in every
request of a batch the sampling parameters `temperature`, `top_p` and `top_k`
(even at their defaults) and `citations` on user text blocks: a line carries
none of them (the content is plain text, not blocks), so it is valid under
2023-06-01 as well (`tests/test_provider_sdks.py` holds it to the SDK's types).
"""

import re
from typing import Any

from schemas.outputs import PromptMessage
from schemas.prompt_formats.base import (
    LINE_HEADROOM,
    MB,
    FileLimits,
    IdRule,
    ModelRule,
    PromptFormat,
    Submission,
    compact_json,
    split_system,
)
from schemas.prompt_formats.results import (
    Answer,
    AnswerError,
    error_text,
    required_key,
    text_answer,
)

CLAUDE = r"claude-[A-Za-z0-9._-]+"
_KINDS = frozenset({"succeeded", "errored", "canceled", "expired"})


def messages_params(prompt: PromptMessage, head: dict[str, Any]) -> dict[str, Any]:
    """Anthropic Messages parameters: `head`, then the system text (if any) and the turns."""
    system, rest = split_system(prompt)
    params = dict(head)
    if system:
        params["system"] = system
    params["messages"] = rest
    return params


def message_texts(message: Any) -> list[str]:
    """The text blocks of an Anthropic Messages API response (none: only tool use, or
    `content: []`)."""
    if not isinstance(message, dict) or not isinstance(message.get("content") or [], list):
        raise AnswerError("Anthropic message that is not {content: [...]}")
    return [
        b["text"]
        for b in message.get("content") or []
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]


class AnthropicBatch(PromptFormat):
    name = "anthropic_batch"
    help = "a request of Anthropic Message Batches"
    api = "Anthropic Messages API 2026-10-21 (Message Batches), also 2023-06-01"
    # Up to 100,000 requests or 256 MB per batch.
    limits = FileLimits(max_lines=100_000, max_bytes=256 * MB, line_headroom=LINE_HEADROOM)
    submission = Submission(
        "send each file's lines as the requests of one Message Batch (POST /v1/messages/batches)",
        model_in_lines=True,
    )
    models = ModelRule(re.compile(CLAUDE), "an Anthropic model id, claude-*", "claude-sonnet-4-5")
    ids = IdRule(re.compile(r"[a-zA-Z0-9_-]{1,64}"))

    def line(self, prompt: PromptMessage, max_tokens: int) -> str:
        params = messages_params(prompt, {"model": prompt.model, "max_tokens": max_tokens})
        return compact_json({"custom_id": self.request_key(prompt.request_id), "params": params})

    def prompt_text(self, value: dict[str, Any]) -> tuple[str, str] | None:
        if "params" not in value:
            return None
        return value["custom_id"], "".join(m["content"] for m in value["params"]["messages"])

    def read_result(self, value: dict[str, Any]) -> Answer | None:
        if "custom_id" not in value or "result" not in value:
            return None
        key = required_key(value.get("custom_id"), "custom_id")
        result = value.get("result")
        if not isinstance(result, dict) or result.get("type") not in _KINDS:
            raise AnswerError("Anthropic result without a result type")
        kind = result["type"]
        if kind != "succeeded":
            return Answer(key, self.name, kind, "", error_text(result.get("error")) or kind)
        message = result.get("message")
        reason = message.get("stop_reason") if isinstance(message, dict) else None
        return text_answer(key, self.name, message_texts(message), "stop_reason", reason)


FORMAT = AnthropicBatch()
