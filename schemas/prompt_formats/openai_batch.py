"""`openai_batch`: an OpenAI Batch API input line for the chat completions endpoint.

Input: `{custom_id, method: POST, url: /v1/chat/completions, body: {model,
messages, max_completion_tokens}}`; OpenAI takes any string as `custom_id`, so it
is the request id. The answer cap is `max_completion_tokens`, the field OpenAI's
SDK types document for every chat model (`tests/test_provider_sdks.py` reads them):
`max_tokens` is deprecated there and refused by o-series models; OpenAI-compatible
servers (vLLM, LiteLLM) take the new field too. Rejected: choosing the field by the
model's name, a rule that breaks with the next model family. Output: `{id,
custom_id, response: {status_code, request_id, body: <chat completion>}, error}`;
the answer is `body.choices[0].message.content`. An `error`, or a status code
other than 200, is an `errored` answer.

Any model name is taken: the line is also the input of OpenAI-compatible
servers and gateways (vLLM, LiteLLM) that serve or route any model.
"""

from dataclasses import replace
from typing import Any, ClassVar

from schemas.outputs import PromptMessage
from schemas.prompt_formats.base import (
    LINE_HEADROOM,
    MB,
    OPENAI_FRAMING,
    FileLimits,
    PromptFormat,
    Submission,
    compact_json,
)
from schemas.prompt_formats.results import (
    Answer,
    AnswerError,
    error_text,
    no_content,
    required_key,
    text_answer,
)

OPENAI_URL = "/v1/chat/completions"


class OpenAIBatch(PromptFormat):
    name = "openai_batch"
    help = "an OpenAI Batch API input line, also for OpenAI-compatible servers"
    api = "OpenAI Batch API, endpoint /v1/chat/completions"
    # An input file holds up to 50,000 requests and 200 MB.
    limits = FileLimits(max_lines=50_000, max_bytes=200 * MB, line_headroom=LINE_HEADROOM)
    framing = OPENAI_FRAMING
    submission = Submission(
        "upload each file to the Files API (purpose batch), then create one batch of it "
        "(POST /v1/batches, endpoint /v1/chat/completions)",
        model_in_lines=True,
    )
    url: ClassVar[str] = OPENAI_URL
    """The endpoint every line of a batch names (`url`): one per batch."""

    def body(self, prompt: PromptMessage, max_tokens: int) -> dict[str, Any]:
        """The request body of `url`."""
        messages = [{"role": m.role, "content": m.content} for m in prompt.messages]
        return {"model": prompt.model, "messages": messages, "max_completion_tokens": max_tokens}

    def line(self, prompt: PromptMessage, max_tokens: int) -> str:
        body = self.body(prompt, max_tokens)
        return compact_json(
            {"custom_id": prompt.request_id, "method": "POST", "url": self.url, "body": body}
        )

    def prompt_text(self, value: dict[str, Any]) -> tuple[str, str] | None:
        if "body" not in value or value.get("url", self.url) != self.url:
            return None
        messages = value["body"]["messages"]
        return value["custom_id"], "".join(m["content"] for m in messages if m["role"] == "user")

    def claims(self, body: dict[str, Any]) -> bool:
        """Whether a successful response body is of this format's endpoint: a chat
        completion, not a Responses API `response` (`openai_responses_batch`)."""
        return body.get("object") != "response"

    def read_result(self, value: dict[str, Any]) -> Answer | None:
        if "custom_id" not in value or "result" in value:  # with `result`: Anthropic's
            return None
        key = required_key(value.get("custom_id"), "custom_id")
        response = value.get("response") or {}
        body = response.get("body") or {}
        ok = not value.get("error") and response.get("status_code") == 200
        if ok and not self.claims(body):
            return None
        if value.get("error"):
            return Answer(key, self.name, "errored", "", error_text(value["error"]))
        if response.get("status_code") != 200:
            error = error_text(body.get("error")) or f"status code {response.get('status_code')}"
            return Answer(key, self.name, "errored", "", error)
        return self.answer(key, body)

    def answer(self, key: str, body: dict[str, Any]) -> Answer:
        """The answer of a successful response body."""
        try:
            choice = body["choices"][0]
            message = choice["message"]
            content = message.get("content")
        except (KeyError, IndexError, TypeError, AttributeError) as err:
            raise AnswerError("OpenAI result without choices[0].message") from err
        reason = choice.get("finish_reason")
        if content is None and message.get("refusal"):
            return replace(no_content(key, self.name, message["refusal"]), stop_reason=reason)
        texts = [] if content is None else [str(content)]
        return text_answer(key, self.name, texts, "finish_reason", reason)


FORMAT = OpenAIBatch()
