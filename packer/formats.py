"""Prompt formats: one packed prompt as the line a batch API takes, exactly as documented.

- `messages`: our own `PromptMessage` JSON (request id, tenant, messages, label map).
- `openai_batch`: an OpenAI Batch API input line, `{custom_id, method: POST,
  url: /v1/chat/completions, body: {model, messages, max_tokens}}`.
- `anthropic_batch`: one element of an Anthropic Message Batches `requests`
  list, `{custom_id, params: {model, max_tokens, system, messages}}`, the
  system contract apart from the messages as the Messages API wants it.
- `vertex_batch`: a Vertex AI Gemini batch prediction input line, `{request:
  {contents: [{role, parts: [{text}]}], systemInstruction: {parts: [{text}]},
  generationConfig: {maxOutputTokens}, labels: {request_id}}}`. Vertex has no
  per-line id, but echoes the request in its output: the id travels in the
  request's `labels` (billing metadata, passed through, ignored by the model).
- `bedrock_batch`: an Amazon Bedrock batch inference input record, `{recordId,
  modelInput}`, `modelInput` being the InvokeModel body of an Anthropic model
  on Bedrock: `{anthropic_version: bedrock-2023-05-31, max_tokens, system,
  messages}`. Bedrock takes the model per job (CreateModelInvocationJob's
  `modelId`), not per line, so the line names none; the config's model for the
  format is checked to be an Anthropic one (`schemas.config.MODEL_RULES`) and
  stamped on the manifests.
- `bedrock_converse_batch`: the same record for a job of invocation type
  Converse, `modelInput` being a Converse request, `{system: [{text}],
  messages: [{role, content: [{text}]}], inferenceConfig: {maxTokens}}`: the
  shape every Bedrock text model takes (Amazon Nova, Llama, Mistral, ...).
  Both are kept: the InvokeModel body is Anthropic's own API, which the
  `anthropic_batch` lines already use, and the default invocation type.

`max_tokens` / `maxOutputTokens` is the answer the ledger reserved, so the
provider never lets the answer outgrow the room the budget kept for it.

Custom ids. OpenAI takes any string, so its `custom_id` is the request id.
Anthropic's must match `^[a-zA-Z0-9_-]{1,64}$`, Vertex label values
`^[a-z0-9_-]{0,63}$`; Bedrock documents its `recordId` as an "alphanumeric
string" with no length, so we keep `^[a-zA-Z0-9]{1,64}$` (Anthropic's length).
A request id that does not fit is mapped to `h-` (Bedrock: `h`, a hyphen not
being alphanumeric) + the first 32 hex digits of its SHA-256 (an id that fits
but already has that shape is mapped too, so the map is one-to-one but for a
128-bit collision).
The map is a pure function of the request id: `evpack verify` recomputes it
from the manifests, so nothing else has to carry it. Rejected: dead-lettering
such requests (their ids come from upstream and are often URLs or emails)
and a stored map (one more output to keep in step with the prompts).
"""

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from packer.layout import OPENAI_FRAMING, Framing
from schemas import PromptMessage
from schemas.config import PromptFormat

OPENAI_URL = "/v1/chat/completions"
VERTEX_ID_LABEL = "request_id"
BEDROCK_ANTHROPIC_VERSION = "bedrock-2023-05-31"
_ANTHROPIC_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_VERTEX_ID = re.compile(r"[a-z0-9_-]{1,63}")
_BEDROCK_ID = re.compile(r"[a-zA-Z0-9]{1,64}")


def hashed_id(request_id: str, prefix: str = "h-") -> str:
    """The mapped id of a request id that a provider's id rules do not admit."""
    return prefix + hashlib.sha256(request_id.encode("utf-8")).hexdigest()[:32]


def _fitted(request_id: str, allowed: re.Pattern[str], prefix: str = "h-") -> str:
    hashed_shape = re.fullmatch(re.escape(prefix) + "[0-9a-f]{32}", request_id)
    if allowed.fullmatch(request_id) and not hashed_shape:
        return request_id
    return hashed_id(request_id, prefix)


def anthropic_custom_id(request_id: str) -> str:
    """The request id, or its hash when Anthropic's custom_id rules do not admit it."""
    return _fitted(request_id, _ANTHROPIC_ID)


def vertex_custom_id(request_id: str) -> str:
    """The request id, or its hash when a Vertex label value may not hold it."""
    return _fitted(request_id, _VERTEX_ID)


def bedrock_record_id(request_id: str) -> str:
    """The request id, or its hash (`h` + hex) when it is not a Bedrock alphanumeric id."""
    return _fitted(request_id, _BEDROCK_ID, prefix="h")


def answer_keys(request_id: str) -> frozenset[str]:
    """Every id a provider's result line may name this request by."""
    return frozenset(
        {
            request_id,
            anthropic_custom_id(request_id),
            vertex_custom_id(request_id),
            bedrock_record_id(request_id),
        }
    )


def _messages(prompt: PromptMessage) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in prompt.messages]


def _split_system(prompt: PromptMessage) -> tuple[str, list[dict[str, str]]]:
    """The system text, and the other messages (Anthropic and Vertex take it apart)."""
    system = "\n\n".join(m.content for m in prompt.messages if m.role == "system")
    rest = [{"role": m.role, "content": m.content} for m in prompt.messages if m.role != "system"]
    return system, rest


def openai_batch_line(prompt: PromptMessage, max_tokens: int) -> dict[str, Any]:
    """An OpenAI Batch API input line for the chat completions endpoint."""
    return {
        "custom_id": prompt.request_id,
        "method": "POST",
        "url": OPENAI_URL,
        "body": {"model": prompt.model, "messages": _messages(prompt), "max_tokens": max_tokens},
    }


def _anthropic_messages(prompt: PromptMessage, head: dict[str, Any]) -> dict[str, Any]:
    """Anthropic Messages parameters: `head`, then the system text (if any) and the turns."""
    system, rest = _split_system(prompt)
    params = dict(head)
    if system:
        params["system"] = system
    params["messages"] = rest
    return params


def anthropic_batch_line(prompt: PromptMessage, max_tokens: int) -> dict[str, Any]:
    """One request of an Anthropic Message Batch: custom_id and Messages API params."""
    params = _anthropic_messages(prompt, {"model": prompt.model, "max_tokens": max_tokens})
    return {"custom_id": anthropic_custom_id(prompt.request_id), "params": params}


def bedrock_batch_line(prompt: PromptMessage, max_tokens: int) -> dict[str, Any]:
    """An Amazon Bedrock batch inference record: recordId and an Anthropic InvokeModel body
    (the same Messages parameters; the model is the job's, not the line's)."""
    head = {"anthropic_version": BEDROCK_ANTHROPIC_VERSION, "max_tokens": max_tokens}
    body = _anthropic_messages(prompt, head)
    return {"recordId": bedrock_record_id(prompt.request_id), "modelInput": body}


def bedrock_converse_batch_line(prompt: PromptMessage, max_tokens: int) -> dict[str, Any]:
    """An Amazon Bedrock batch inference record whose modelInput is a Converse request."""
    system, rest = _split_system(prompt)
    body: dict[str, Any] = {}
    if system:
        body["system"] = [{"text": system}]
    body["messages"] = [{"role": m["role"], "content": [{"text": m["content"]}]} for m in rest]
    body["inferenceConfig"] = {"maxTokens": max_tokens}
    return {"recordId": bedrock_record_id(prompt.request_id), "modelInput": body}


def vertex_batch_line(prompt: PromptMessage, max_tokens: int) -> dict[str, Any]:
    """A Vertex AI Gemini batch prediction input line (a GenerateContentRequest)."""
    system, rest = _split_system(prompt)
    request: dict[str, Any] = {
        "contents": [
            {
                "role": "model" if m["role"] == "assistant" else "user",
                "parts": [{"text": m["content"]}],
            }
            for m in rest
        ],
    }
    if system:
        request["systemInstruction"] = {"parts": [{"text": system}]}
    request["generationConfig"] = {"maxOutputTokens": max_tokens}
    request["labels"] = {VERTEX_ID_LABEL: vertex_custom_id(prompt.request_id)}
    return {"request": request}


_PROVIDER_LINES: dict[PromptFormat, Callable[[PromptMessage, int], dict[str, Any]]] = {
    "openai_batch": openai_batch_line,
    "anthropic_batch": anthropic_batch_line,
    "vertex_batch": vertex_batch_line,
    "bedrock_batch": bedrock_batch_line,
    "bedrock_converse_batch": bedrock_converse_batch_line,
}


def format_line(prompt: PromptMessage, max_tokens: int, fmt: PromptFormat) -> str:
    """The prompt as one JSON line (no newline) of the chosen format.

    `messages` is our own prompt message; its reserved answer is in the manifest.
    """
    if fmt == "messages":
        return prompt.model_dump_json()
    line = _PROVIDER_LINES[fmt](prompt, max_tokens)
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class PromptLine:
    """A prompt as written to the generation queue, with its routing facts.

    `conflicts` (label groups) and `uncovered` (facets) travel with the
    streaming prompt message, so answers can be verified without the manifest.
    """

    request_id: str
    tenant_id: str
    builder_version: str
    line: str
    conflicts: tuple[tuple[str, ...], ...] = ()
    uncovered: tuple[str, ...] = ()


@dataclass(frozen=True)
class FileLimits:
    """A provider's documented limits on one input file (or batch), and our shard roll.

    `line_headroom` is kept below `max_bytes`: a shard rolls once it holds more
    than `max_bytes - line_headroom` bytes, so it can never pass `max_bytes`;
    a longer line is dead-lettered.
    """

    max_lines: int | None
    max_bytes: int | None
    line_headroom: int

    @property
    def roll_bytes(self) -> int | None:
        return None if self.max_bytes is None else self.max_bytes - self.line_headroom


MB = 1_000_000
LINE_HEADROOM = 8 * MB
"""Longest prompt line a sharded file takes; prompts are kilobytes, not megabytes."""

BEDROCK_LIMITS = FileLimits(max_lines=50_000, max_bytes=1_000 * MB, line_headroom=LINE_HEADROOM)
"""A Bedrock batch input file, whichever the job's invocation type (quotas below)."""
FILE_LIMITS: dict[PromptFormat, FileLimits] = {
    "messages": FileLimits(max_lines=None, max_bytes=None, line_headroom=0),
    # OpenAI Batch API: an input file holds up to 50,000 requests and 200 MB.
    "openai_batch": FileLimits(max_lines=50_000, max_bytes=200 * MB, line_headroom=LINE_HEADROOM),
    # Anthropic Message Batches: up to 100,000 requests or 256 MB per batch.
    "anthropic_batch": FileLimits(
        max_lines=100_000, max_bytes=256 * MB, line_headroom=LINE_HEADROOM
    ),
    # Vertex AI Gemini batch inference: up to 200,000 requests and 1 GB per input file, as
    # published guides state them (Google's quota page names concurrent jobs, not files).
    "vertex_batch": FileLimits(
        max_lines=200_000, max_bytes=1_000 * MB, line_headroom=LINE_HEADROOM
    ),
    # Amazon Bedrock batch inference, default quotas of Anthropic models: 50,000 records per
    # input file (and per job), 1 GB per input file (not adjustable), 5 GB per job. One shard
    # is therefore one job's worth. A job also needs at least 100 records (README).
    "bedrock_batch": BEDROCK_LIMITS,
    "bedrock_converse_batch": BEDROCK_LIMITS,
}


TEXTS_ONLY = Framing(per_message=0, reply_priming=0, count_roles=False)
"""A provider that documents no tokens around the message texts."""

FRAMING: dict[PromptFormat, Framing] = {
    "messages": OPENAI_FRAMING,
    "openai_batch": OPENAI_FRAMING,
    "anthropic_batch": TEXTS_ONLY,
    "vertex_batch": TEXTS_ONLY,
    "bedrock_batch": TEXTS_ONLY,
    "bedrock_converse_batch": TEXTS_ONLY,
}
"""The chat framing the ledger counts for each format, as its provider documents it.

OpenAI documents 3 tokens per message (with its role) and 3 priming the reply.
Anthropic, directly or on Bedrock (`system` apart, `messages` of role and
content), Bedrock's Converse (the same, content as text blocks) and Vertex AI
(`systemInstruction`, `contents` of role and parts) document no overhead and
count with tokenizers of their own: the texts alone are counted, and the
safety margin is what covers the provider's wrapping (README, "Token counts
per provider").
"""
