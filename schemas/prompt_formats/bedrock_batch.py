"""`bedrock_batch`: an Amazon Bedrock batch inference record whose `modelInput` is the
InvokeModel body of an Anthropic model on Bedrock.

Input: `{recordId, modelInput: {anthropic_version: bedrock-2023-05-31,
max_tokens, system, messages}}` (the Messages parameters of `anthropic_batch`;
the model is the job's, CreateModelInvocationJob's `modelId`, not the line's:
the config's model for the format is checked to be an Anthropic one and
stamped on the manifests). Bedrock documents `recordId` as an "alphanumeric
string" with no length, so we keep `^[a-zA-Z0-9]{1,64}$` (Anthropic's length).
Output (`<input>.jsonl.out`): `{recordId, modelInput, modelOutput}`,
`modelOutput` being the InvokeModel response body (a Messages API message,
`content: [{type: text, text}]`), or `{recordId, modelInput, error: {errorCode,
errorMessage}}`. A record's kind is told from its echoed `modelInput`, which
for this format always names its `anthropic_version`
(`bedrock_converse_batch` subclasses this one).
"""

import re
from typing import Any

from schemas.outputs import PromptMessage
from schemas.prompt_formats.anthropic_batch import CLAUDE, message_texts, messages_params
from schemas.prompt_formats.base import (
    LINE_HEADROOM,
    MB,
    FileLimits,
    IdRule,
    ModelRule,
    PromptFormat,
    Submission,
    compact_json,
)
from schemas.prompt_formats.results import (
    Answer,
    AnswerError,
    error_text,
    required_key,
    text_answer,
)

ANTHROPIC_VERSION = "bedrock-2023-05-31"
_ARN = r"(arn:aws[a-z-]*:bedrock:[a-z0-9-]*:[0-9]*:(foundation-model|inference-profile)/)?"
_PROFILE = r"((us|us-gov|eu|apac|jp|au|ca|global)\.)?"
VERSION = r"(:[0-9a-z]+)*"
BEDROCK_ID = _ARN + _PROFILE
"""What may precede a Bedrock model id: a foundation model or inference profile ARN, and
a system inference profile's region group (an application inference profile's or a
provisioned model's ARN does not name its model, and batch runs no provisioned model)."""
_CLAUDE = BEDROCK_ID + r"anthropic\." + CLAUDE + VERSION
OUT_OF_SHAPE = (
    "Bedrock result whose modelOutput is neither the Anthropic message nor the Converse "
    "response its modelInput asked for"
)


def turn_text(content: Any) -> str:
    """A turn's text: a string (InvokeModel) or content blocks (Converse; the block with
    `text` set, the union's other members null)."""
    if isinstance(content, str):
        return content
    texts = (b.get("text") if isinstance(b, dict) else None for b in content)
    return "".join(t for t in texts if isinstance(t, str))


class BedrockBatch(PromptFormat):
    name = "bedrock_batch"
    help = "an Amazon Bedrock batch inference record, InvokeModel body of an Anthropic model"
    api = "Amazon Bedrock batch inference, InvokeModel, anthropic_version bedrock-2023-05-31"
    # Default quotas of Anthropic models: 50,000 records per input file (and per job), 1 GB
    # per input file (not adjustable), 5 GB per job. One shard is therefore one job's
    # worth. A job also needs at least 100 records (README). The same whichever the job's
    # invocation type.
    limits = FileLimits(max_lines=50_000, max_bytes=1_000 * MB, line_headroom=LINE_HEADROOM)
    submission = Submission(
        "copy the files to S3, then create one model invocation job per file "
        "(CreateModelInvocationJob, modelId the model)",
        model_in_lines=False,
        min_records=100,
    )
    models = ModelRule(
        re.compile(_CLAUDE),
        "a Bedrock id of an Anthropic model (anthropic.claude-*, an inference profile "
        "such as us.anthropic.claude-*, or the ARN of either)",
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    )
    converse = False
    ids = IdRule(re.compile(r"[a-zA-Z0-9]{1,64}"), prefix="h")

    def model_input(self, prompt: PromptMessage, max_tokens: int) -> dict[str, Any]:
        """The InvokeModel body: the same Messages parameters as `anthropic_batch`'s."""
        head = {"anthropic_version": ANTHROPIC_VERSION, "max_tokens": max_tokens}
        return messages_params(prompt, head)

    def line(self, prompt: PromptMessage, max_tokens: int) -> str:
        body = self.model_input(prompt, max_tokens)
        return compact_json({"recordId": self.request_key(prompt.request_id), "modelInput": body})

    def _ours(self, value: dict[str, Any]) -> bool:
        """Whether the record's echoed `modelInput` is of this invocation type."""
        echoed = value.get("modelInput")
        converse = isinstance(echoed, dict) and "anthropic_version" not in echoed
        return converse == self.converse

    def prompt_text(self, value: dict[str, Any]) -> tuple[str, str] | None:
        if "modelInput" not in value or not self._ours(value):
            return None
        messages = value["modelInput"]["messages"]
        return value["recordId"], "".join(turn_text(m["content"]) for m in messages)

    def read_result(self, value: dict[str, Any]) -> Answer | None:
        if "recordId" not in value or ("modelOutput" not in value and "error" not in value):
            return None
        if not self._ours(value):
            return None
        key = required_key(value.get("recordId"), "recordId")
        if error := value.get("error"):
            if isinstance(error, dict) and "errorMessage" in error:
                error = f"{error.get('errorCode', 'error')}: {error['errorMessage']}"
            return Answer(key, self.name, "errored", "", error_text(error))
        return self.output_answer(key, value.get("modelOutput"))

    def output_answer(self, key: str, output: Any) -> Answer:
        """The answer in a successful record's `modelOutput`."""
        if isinstance(output, dict) and isinstance(output.get("content"), list):
            reason = output.get("stop_reason")
            return text_answer(key, self.name, message_texts(output), "stop_reason", reason)
        raise AnswerError(OUT_OF_SHAPE)


FORMAT = BedrockBatch()
