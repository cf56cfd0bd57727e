"""`bedrock_converse_batch`: a Bedrock batch inference record for a job of invocation
type Converse, the shape every Bedrock text model takes (Amazon Nova, Llama, Mistral, ...).

Input: `{recordId, modelInput: {system: [{text}], messages: [{role, content:
[{text}]}], inferenceConfig: {maxTokens}}}`. Output: `modelOutput` is a
Converse response, `output: {message: {content: [{text}]}}`, each block
carrying every member of the content union, the others null. Kept beside
`bedrock_batch`, whose InvokeModel body is Anthropic's own API (the one
`anthropic_batch` lines use) and the default invocation type; the records,
ids, limits and errors are the same (a subclass).
"""

import re
from typing import Any

from schemas.outputs import PromptMessage
from schemas.prompt_formats.base import ModelRule, Submission, split_system
from schemas.prompt_formats.bedrock_batch import BEDROCK_ID, OUT_OF_SHAPE, VERSION, BedrockBatch
from schemas.prompt_formats.results import Answer, AnswerError, text_answer

_ANY = BEDROCK_ID + r"[a-z][a-z0-9]*\.[a-z0-9][A-Za-z0-9._-]*" + VERSION


class BedrockConverseBatch(BedrockBatch):
    name = "bedrock_converse_batch"
    help = "an Amazon Bedrock batch inference record of invocation type Converse"
    api = "Amazon Bedrock batch inference, invocation type Converse"
    models = ModelRule(
        re.compile(_ANY),
        "a Bedrock model id (vendor.model, such as amazon.nova-pro-v1:0, an inference "
        "profile such as us.amazon.nova-pro-v1:0, or the ARN of either)",
        "us.amazon.nova-pro-v1:0",
    )
    converse = True
    submission = Submission(
        "copy the files to S3, then create one model invocation job per file "
        "(CreateModelInvocationJob, modelId the model, modelInvocationType Converse)",
        model_in_lines=False,
        min_records=100,
    )

    def model_input(self, prompt: PromptMessage, max_tokens: int) -> dict[str, Any]:
        system, rest = split_system(prompt)
        body: dict[str, Any] = {}
        if system:
            body["system"] = [{"text": system}]
        body["messages"] = [{"role": m["role"], "content": [{"text": m["content"]}]} for m in rest]
        body["inferenceConfig"] = {"maxTokens": max_tokens}
        return body

    def output_answer(self, key: str, output: Any) -> Answer:
        message = (output.get("output") or {}).get("message") if isinstance(output, dict) else None
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            raise AnswerError(OUT_OF_SHAPE)
        texts = [
            b["text"]
            for b in message["content"]
            if isinstance(b, dict) and isinstance(b.get("text"), str)
        ]
        return text_answer(key, self.name, texts, "stopReason", output.get("stopReason"))


FORMAT = BedrockConverseBatch()
