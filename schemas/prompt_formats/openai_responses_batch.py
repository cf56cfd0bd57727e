"""`openai_responses_batch`: an OpenAI Batch API input line for the Responses endpoint.

Input: `{custom_id, method: POST, url: /v1/responses, body: {model, instructions,
input, max_output_tokens}}`: the system contract is `instructions`, the other
messages `input` (`{role, content}` items, the Responses API's easy input
messages), the answer cap `max_output_tokens`. A batch names one endpoint, so a
run writes this format or `openai_batch`, never both. Output: `{id, custom_id,
response: {status_code, request_id, body: <response>}, error}`; the answer is the
text of the `output_text` parts of the body's `message` items. A response with
none (a refusal, or a status with no text) is `no_content` with its reason; one cut
off at the output limit (`status: incomplete`, `incomplete_details.reason:
max_output_tokens`) is `truncated`, as every format's; errors read as
`openai_batch`'s (the same envelope). Rejected: a
`--openai_endpoint` flag picking the endpoint of `openai_batch` (the line shape,
its reader and its SDK check are a format's, and `--prompt_format` already picks
those).
"""

from typing import Any

from schemas.outputs import PromptMessage
from schemas.prompt_formats.base import Submission, split_system
from schemas.prompt_formats.openai_batch import OpenAIBatch
from schemas.prompt_formats.results import Answer, AnswerError, no_content, text_answer


class OpenAIResponsesBatch(OpenAIBatch):
    name = "openai_responses_batch"
    help = "an OpenAI Batch API input line for the Responses endpoint (/v1/responses)"
    api = "OpenAI Batch API, endpoint /v1/responses"
    url = "/v1/responses"
    submission = Submission(
        "upload each file to the Files API (purpose batch), then create one batch of it "
        "(POST /v1/batches, endpoint /v1/responses)",
        model_in_lines=True,
    )

    def body(self, prompt: PromptMessage, max_tokens: int) -> dict[str, Any]:
        system, rest = split_system(prompt)
        body: dict[str, Any] = {"model": prompt.model}
        if system:
            body["instructions"] = system
        return {**body, "input": rest, "max_output_tokens": max_tokens}

    def prompt_text(self, value: dict[str, Any]) -> tuple[str, str] | None:
        if "body" not in value or value.get("url") != self.url:
            return None
        items = value["body"]["input"]
        return value["custom_id"], "".join(m["content"] for m in items if m["role"] == "user")

    def claims(self, body: dict[str, Any]) -> bool:
        return body.get("object") == "response"

    def answer(self, key: str, body: dict[str, Any]) -> Answer:
        output = body.get("output")
        if not isinstance(output, list):
            raise AnswerError("OpenAI response without an output list")
        parts = [
            part
            for item in output
            if isinstance(item, dict) and item.get("type") == "message"
            for part in item.get("content") or []
            if isinstance(part, dict)
        ]
        texts = [p["text"] for p in parts if p.get("type") == "output_text" and "text" in p]
        refusal = next((p.get("refusal") for p in parts if p.get("type") == "refusal"), None)
        if refusal and not texts:
            return no_content(key, self.name, refusal)
        details = body.get("incomplete_details")
        if body.get("status") == "incomplete" and isinstance(details, dict):
            return text_answer(key, self.name, texts, "reason", details.get("reason"))
        return text_answer(key, self.name, texts, "status", body.get("status"))


FORMAT = OpenAIResponsesBatch()
