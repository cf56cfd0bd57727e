"""Prompt lines in each batch API's documented input shape, and files within their limits."""

import json
import re
from functools import partial
from pathlib import Path

import apache_beam as beam
from apache_beam.utils.shared import Shared
from hypothesis import given, settings
from hypothesis import strategies as st

from packer import BUILDER_VERSION, Catalog, pack_request
from packer.formats import (
    FILE_LIMITS,
    FRAMING,
    FileLimits,
    PromptLine,
    answer_keys,
    anthropic_custom_id,
    format_line,
    hashed_id,
    vertex_custom_id,
)
from schemas import PackingConfig, PromptMessage
from tests.factories import encoded_prompt_tokens
from tests.strategies import catalog_documents, examples, requests
from tests.test_packer_properties import RUNTIME, configs
from transforms.prompt_files import WritePromptLines

PROMPT = PromptMessage.model_validate(
    {
        "request_id": "acme-q00",
        "tenant_id": "acme",
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "Cite labels."},
            {
                "role": "user",
                "content": '<E1 title="T">\nx &amp; y\n</E1>\nQuestion: ?',
            },
        ],
        "label_map": [{"label": "E1", "evidence_id": "ev1"}],
        "prompt_tokens": 40,
        "builder_version": BUILDER_VERSION,
        "config_hash": "abc",
    }
)


def _line(fmt: str, prompt: PromptMessage = PROMPT, max_tokens: int = 512) -> dict:
    return json.loads(format_line(prompt, max_tokens, fmt))  # type: ignore[arg-type]


def test_messages_line_is_the_prompt_message() -> None:
    assert PromptMessage.model_validate(_line("messages")) == PROMPT


def test_openai_batch_line() -> None:
    """https://platform.openai.com/docs/guides/batch: custom_id, method, url, body."""
    line = _line("openai_batch")
    assert set(line) == {"custom_id", "method", "url", "body"}
    assert line["custom_id"] == "acme-q00"
    assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
    assert line["body"] == {
        "model": "gpt-4o-mini",
        "messages": [m.model_dump() for m in PROMPT.messages],
        "max_tokens": 512,
    }


def test_anthropic_batch_request() -> None:
    """Message Batches: {custom_id, params}; params are Messages API params, system apart."""
    line = _line("anthropic_batch")
    assert set(line) == {"custom_id", "params"}
    assert line["params"] == {
        "model": "gpt-4o-mini",
        "max_tokens": 512,
        "system": "Cite labels.",
        "messages": [{"role": "user", "content": PROMPT.messages[1].content}],
    }
    assert all(m["role"] in {"user", "assistant"} for m in line["params"]["messages"])


def test_vertex_batch_line() -> None:
    """Gemini batch prediction: {request: GenerateContentRequest} in camelCase."""
    line = _line("vertex_batch")
    assert set(line) == {"request"}
    request = line["request"]
    assert request["contents"] == [
        {"role": "user", "parts": [{"text": PROMPT.messages[1].content}]}
    ]
    assert request["systemInstruction"] == {"parts": [{"text": "Cite labels."}]}
    assert request["generationConfig"] == {"maxOutputTokens": 512}
    assert request["labels"] == {"request_id": "acme-q00"}
    assert re.fullmatch(r"[a-z][a-z0-9_-]{0,62}", next(iter(request["labels"])))


ids = st.text(min_size=1, max_size=120)


@given(ids)
def test_custom_ids_fit_the_provider_rules(request_id: str) -> None:
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", anthropic_custom_id(request_id))
    assert re.fullmatch(r"[a-z0-9_-]{1,63}", vertex_custom_id(request_id))
    assert request_id in answer_keys(request_id)


@given(ids, ids)
def test_custom_ids_are_one_to_one(a: str, b: str) -> None:
    if a != b:
        assert anthropic_custom_id(a) != anthropic_custom_id(b)
        assert vertex_custom_id(a) != vertex_custom_id(b)


def test_fitting_ids_are_kept_and_others_hashed() -> None:
    assert anthropic_custom_id("Acme_q-01") == "Acme_q-01"
    assert vertex_custom_id("Acme_q-01") == hashed_id("Acme_q-01")  # upper case
    assert anthropic_custom_id("acme/q 1") == hashed_id("acme/q 1")
    looks_hashed = hashed_id("x")
    assert anthropic_custom_id(looks_hashed) == hashed_id(looks_hashed) != looks_hashed


def test_documented_file_limits() -> None:
    assert FILE_LIMITS["openai_batch"].max_lines == 50_000
    assert FILE_LIMITS["openai_batch"].max_bytes == 200_000_000
    assert FILE_LIMITS["anthropic_batch"].max_lines == 100_000
    assert FILE_LIMITS["anthropic_batch"].max_bytes == 256_000_000
    assert FILE_LIMITS["messages"].roll_bytes is None


def _write(tmp_path: Path, lines: list[str], limits: FileLimits) -> list[Path]:
    with beam.Pipeline("FnApiRunner") as p:
        _ = (
            p
            | beam.Create([PromptLine(str(i), "t", "b", line) for i, line in enumerate(lines)])
            | WritePromptLines(str(tmp_path), "prompts", limits)
        )
    return sorted((tmp_path / "prompts").glob("prompts-*.jsonl"))


def test_shards_roll_by_line_count(tmp_path: Path) -> None:
    lines = [json.dumps({"n": i}) for i in range(25)]
    files = _write(tmp_path, lines, FileLimits(max_lines=10, max_bytes=None, line_headroom=0))
    counts = [len(f.read_text().splitlines()) for f in files]
    assert sum(counts) == 25 and max(counts) <= 10
    assert sorted(x for f in files for x in f.read_text().splitlines()) == sorted(lines)


@settings(max_examples=examples(15), deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=30))
def test_shards_never_pass_the_byte_limit(tmp_path_factory, sizes: list[int]) -> None:
    tmp_path = tmp_path_factory.mktemp("shards")
    limits = FileLimits(max_lines=None, max_bytes=100, line_headroom=40)
    lines = ["x" * n for n in sizes]
    files = _write(tmp_path, lines, limits)
    assert all(f.stat().st_size <= 100 for f in files)
    assert sorted(x for f in files for x in f.read_text().splitlines()) == sorted(lines)


def test_a_line_past_the_headroom_is_a_dead_letter(monkeypatch) -> None:
    from schemas import DeadLetter
    from tests.factories import candidate, document, request
    from transforms import pack

    monkeypatch.setitem(pack.FILE_LIMITS, "openai_batch", FileLimits(10, 10_000, 500))
    config = PackingConfig(prompt_format="openai_batch")
    fn = pack.PackDoFn(config, partial(pack.SnapshotReader, Shared()), None)
    fn.setup()
    req = request(candidate("e1", text="A passage. " * 60), request_id="q1")
    result = pack_request(req, Catalog([document()]), config, fn._runtime)
    letter = fn._line(result)
    assert isinstance(letter, DeadLetter)
    assert letter.stage == "format" and letter.request_id == "q1"
    assert "exceeds the 500-byte line headroom" in letter.error
    short = pack_request(request(candidate("e1")), Catalog([document()]), config, fn._runtime)
    monkeypatch.setitem(pack.FILE_LIMITS, "openai_batch", FileLimits(10, 1_000_000, 100_000))
    assert isinstance(fn._line(short), PromptLine)


@settings(max_examples=examples(300))
@given(
    docs=catalog_documents(),
    req=requests(),
    config=configs,
    fmt=st.sampled_from(["messages", "openai_batch", "anthropic_batch", "vertex_batch"]),
)
def test_the_ledger_counts_each_formats_framing(docs, req, config, fmt: str) -> None:
    """OpenAI: 3 per message with its role, 3 priming; Anthropic, Vertex: the texts alone."""
    config = PackingConfig.model_validate({**config.model_dump(), "prompt_format": fmt})
    result = pack_request(req, Catalog(docs), config, RUNTIME)
    exact = encoded_prompt_tokens(RUNTIME.tokens.encoding, result.prompt.messages, FRAMING[fmt])
    ledger = result.manifest.budget
    assert exact == result.prompt.prompt_tokens == ledger.prompt_tokens
    assert exact + ledger.reserved_answer <= ledger.input_limit


def test_the_framing_of_each_provider() -> None:
    texts = RUNTIME.tokens.count(PROMPT.messages[0].content) + RUNTIME.tokens.count(
        PROMPT.messages[1].content
    )
    openai = encoded_prompt_tokens(
        RUNTIME.tokens.encoding, PROMPT.messages, FRAMING["openai_batch"]
    )
    assert openai == texts + 3 + 2 * 3 + RUNTIME.tokens.count("system") + RUNTIME.tokens.count(
        "user"
    )
    assert (
        encoded_prompt_tokens(RUNTIME.tokens.encoding, PROMPT.messages, FRAMING["vertex_batch"])
        == texts
    )
