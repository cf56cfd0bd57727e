"""Our batch lines against the providers' own SDK types (the `openai`, `anthropic` and
`google-genai` packages, in the `test` extra): every field we write is one the SDK
declares, none of them deprecated there, the SDK's required fields are present, and
the SDK's types accept the values. Bedrock publishes no typed line in a package this
suite installs (its Anthropic body is the Anthropic SDK's, checked here; Converse is
checked against the documentation in `tests/test_formats.py`)."""

import inspect
import json
import re
from typing import Any, get_args, get_type_hints

import pytest
from anthropic._constants import ANTHROPIC_API_VERSION
from anthropic.types.messages import batch_create_params
from google.genai import types as genai
from openai.types.batch_create_params import BatchCreateParams
from openai.types.chat import completion_create_params
from openai.types.responses import response_create_params
from pydantic import TypeAdapter

from schemas import PromptMessage
from schemas.prompt_formats import FORMATS, format_line
from tests.test_formats import PROMPT

OPENAI_BODY = completion_create_params.CompletionCreateParamsNonStreaming
ANTHROPIC_REQUEST = batch_create_params.Request
RESPONSES_BODY = response_create_params.ResponseCreateParamsNonStreaming


def _keys(typed: Any) -> tuple[set[str], set[str]]:
    """A TypedDict's keys, and those it requires."""
    return set(get_type_hints(typed)), set(typed.__required_keys__)


def _deprecated(typed: Any, key: str) -> bool:
    """Whether the SDK's docstring of `key`, in the class or base that declares it, calls
    it deprecated (a TypedDict keeps its bases in `__orig_bases__`, not its MRO)."""
    pattern = re.compile(rf"\n    {key}: [^\n]*\n    \"\"\"(.*?)\"\"\"", re.S)
    classes = [typed]
    while classes:
        owner = classes.pop(0)
        doc = pattern.search(inspect.getsource(owner))
        if doc is not None:
            # the field itself, not a list of its deprecated values (`model`)
            return re.search(r"\bdeprecated\b(?! values)", doc.group(1), re.I) is not None
        classes += [b for b in getattr(owner, "__orig_bases__", ()) if hasattr(b, "__total__")]
    return False


def _line(fmt: str, prompt: PromptMessage = PROMPT) -> dict[str, Any]:
    return json.loads(format_line(prompt, 512, fmt))


def test_the_sdk_reading_is_able_to_see_a_deprecation() -> None:
    """The check below could fail: the SDK does call `max_tokens` deprecated."""
    assert _deprecated(OPENAI_BODY, "max_tokens")
    assert not _deprecated(OPENAI_BODY, "max_completion_tokens")


@pytest.mark.parametrize("model", ["gpt-4o-mini", "o3-mini"])
def test_openai_line_is_a_chat_completion_the_sdk_declares(model: str) -> None:
    body = _line("openai_batch", PROMPT.model_copy(update={"model": model}))["body"]
    declared, required = _keys(OPENAI_BODY)
    assert set(body) <= declared and required <= set(body)
    assert not [key for key in body if _deprecated(OPENAI_BODY, key)]
    TypeAdapter(OPENAI_BODY).validate_python(body)


@pytest.mark.parametrize("fmt", ["anthropic_batch", "bedrock_batch"])
def test_anthropic_request_is_what_the_sdk_declares(fmt: str) -> None:
    """Bedrock's InvokeModel body of an Anthropic model is the Messages API's, without the
    model (Bedrock takes it per job) and with `anthropic_version`."""
    line = _line("anthropic_batch")
    declared, required = _keys(ANTHROPIC_REQUEST)
    assert set(line) <= declared and required <= set(line)
    params_type = get_type_hints(ANTHROPIC_REQUEST)["params"]
    declared, required = _keys(params_type)
    params = line["params"]
    if fmt == "bedrock_batch":
        model_input = _line(fmt)["modelInput"]
        assert model_input.pop("anthropic_version") == "bedrock-2023-05-31"
        params = {**model_input, "model": params["model"]}
    assert set(params) <= declared and required <= set(params)
    assert not [key for key in params if _deprecated(params_type, key)]
    TypeAdapter(ANTHROPIC_REQUEST).validate_python({**line, "params": params})


def test_vertex_request_is_made_of_the_genai_sdks_types() -> None:
    """Vertex AI batch prediction takes `{"request": GenerateContentRequest}` in the REST
    API's camelCase; google-genai's models take those names and forbid any other."""
    request = _line("vertex_batch")["request"]
    assert set(request) == {"contents", "systemInstruction", "generationConfig", "labels"}
    for content in request["contents"]:
        genai.Content.model_validate(content)
    genai.Content.model_validate(request["systemInstruction"])
    config = genai.GenerationConfig.model_validate(request["generationConfig"])
    assert config.max_output_tokens == 512
    labels = genai.GenerateContentConfig.model_validate({"labels": request["labels"]}).labels
    assert labels == request["labels"]
    with pytest.raises(ValueError):  # the SDK would refuse a field of another provider's
        genai.GenerationConfig.model_validate({"maxTokens": 512})


def test_each_format_names_the_api_its_lines_are_valid_for() -> None:
    assert all(f.api for f in FORMATS.values())
    assert ANTHROPIC_API_VERSION in FORMATS["anthropic_batch"].api


@pytest.mark.parametrize("fmt", ["anthropic_batch", "bedrock_batch"])
def test_anthropic_lines_are_valid_under_the_sdks_api_version(fmt: str) -> None:
    """API version 2026-10-21 (SDK 2.x) refuses `temperature`, `top_p`, `top_k` and
    `citations` on user text blocks in every request of a batch: no line carries any."""
    assert ANTHROPIC_API_VERSION == "2026-10-21"
    sampling = {"temperature", "top_p", "top_k"}
    assert not sampling & set(get_type_hints(get_type_hints(ANTHROPIC_REQUEST)["params"]))
    line = _line(fmt)
    body = line.get("params") or line["modelInput"]
    assert not sampling & set(body)
    assert all(isinstance(m["content"], str) for m in body["messages"])  # no blocks at all
    assert "citations" not in json.dumps(line)


def test_openai_responses_line_is_what_the_sdk_declares() -> None:
    """The Responses endpoint line: a batch input line naming `/v1/responses`, one of the
    SDK's batch endpoints, and a body the SDK's `ResponseCreateParams` declares."""
    line = _line("openai_responses_batch")
    assert line["url"] in get_args(get_type_hints(BatchCreateParams)["endpoint"])
    body = line["body"]
    declared, required = _keys(RESPONSES_BODY)
    assert set(body) <= declared and required <= set(body)
    assert not [key for key in body if _deprecated(RESPONSES_BODY, key)]
    TypeAdapter(RESPONSES_BODY).validate_python(body)
    assert body["instructions"] == PROMPT.messages[0].content
    assert [m["role"] for m in body["input"]] == ["user"]
    assert body["max_output_tokens"] == 512
