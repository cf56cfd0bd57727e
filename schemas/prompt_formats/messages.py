"""`messages`: our own `PromptMessage` JSON (request id, tenant, messages, label map).

Its reserved answer is in the manifest; the answers to it come back as plain
`{request_id, answer}` lines (`packer.verification.answers`), so it reads no result line.
"""

from typing import Any

from schemas.outputs import PromptMessage
from schemas.prompt_formats.base import OPENAI_FRAMING, PromptFormat


class Messages(PromptFormat):
    name = "messages"
    help = "our PromptMessage JSON, messages and label map"
    api = "none: our PromptMessage (schemas/outputs.py), for a generation service of yours"
    provider = False
    framing = OPENAI_FRAMING

    def line(self, prompt: PromptMessage, max_tokens: int) -> str:
        return prompt.model_dump_json()

    def prompt_text(self, value: dict[str, Any]) -> tuple[str, str] | None:
        if "messages" not in value or "request_id" not in value:
            return None
        user = "".join(m["content"] for m in value["messages"] if m.get("role") == "user")
        return value["request_id"], user


FORMAT = Messages()
