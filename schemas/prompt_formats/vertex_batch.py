"""`vertex_batch`: a Vertex AI Gemini batch prediction input line (a GenerateContentRequest).

Input: `{request: {contents: [{role, parts: [{text}]}], systemInstruction:
{parts: [{text}]}, generationConfig: {maxOutputTokens}, labels: {request_id}}}`.
Vertex has no per-line id, but echoes the request in its output: the id
travels in the request's `labels` (billing metadata, passed through, ignored
by the model), whose values must match `^[a-z0-9_-]{0,63}$`.
Output: `{status, processed_time, request, response: {candidates: [{content:
{parts: [{text}]}}]}}`; a non-empty `status` is an error.
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
from schemas.prompt_formats.results import Answer, error_text, required_key, text_answer

ID_LABEL = "request_id"
_GEMINI = r"((projects/[^/]+/locations/[^/]+/)?publishers/google/models/)?gemini-[A-Za-z0-9._-]+"


class VertexBatch(PromptFormat):
    name = "vertex_batch"
    help = "a Vertex AI Gemini batch prediction input line"
    api = "Vertex AI batch prediction v1, Gemini GenerateContentRequest"
    # Up to 200,000 requests and 1 GB per input file, as published guides state them
    # (Google's quota page names concurrent jobs, not files).
    limits = FileLimits(max_lines=200_000, max_bytes=1_000 * MB, line_headroom=LINE_HEADROOM)
    models = ModelRule(
        re.compile(_GEMINI), "a Gemini model, gemini-* or its publishers/ path", "gemini-2.5-flash"
    )
    ids = IdRule(re.compile(r"[a-z0-9_-]{1,63}"))
    submission = Submission(
        "copy the files to Cloud Storage, then create one batch prediction job per file "
        "(BatchPredictionJob, instancesFormat jsonl, model the model)",
        model_in_lines=False,
    )

    def line(self, prompt: PromptMessage, max_tokens: int) -> str:
        system, rest = split_system(prompt)
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
        request["labels"] = {ID_LABEL: self.request_key(prompt.request_id)}
        return compact_json({"request": request})

    def prompt_text(self, value: dict[str, Any]) -> tuple[str, str] | None:
        if "request" not in value:
            return None
        request = value["request"]
        texts = (p["text"] for c in request["contents"] for p in c["parts"])
        return request["labels"][ID_LABEL], "".join(texts)

    def read_result(self, value: dict[str, Any]) -> Answer | None:
        if "request" not in value or ("response" not in value and "status" not in value):
            return None
        labels = (value.get("request") or {}).get("labels") or {}
        key = required_key(labels.get(ID_LABEL), f"request.labels.{ID_LABEL}")
        if status := value.get("status"):
            return Answer(key, self.name, "errored", "", error_text(status))
        response = value.get("response") or {}
        candidates = response.get("candidates") or []
        if not candidates:
            error = error_text(response.get("promptFeedback")) or "no candidates"
            return Answer(key, self.name, "errored", "", error)
        parts = (candidates[0].get("content") or {}).get("parts") or []
        texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return text_answer(key, self.name, texts, "finishReason", candidates[0].get("finishReason"))


FORMAT = VertexBatch()
