"""Prompt lines in each batch API's documented input shape, and files within their limits."""

import json
import re
from pathlib import Path

import apache_beam as beam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from packer import BUILDER_VERSION, Catalog, PackerRuntime, pack_request
from packer.layout import parse_blocks
from packer.verification.answers import parse_prompt_line
from pipelines.options.config_file import load_config
from schemas import PackingConfig, PromptMessage
from schemas.config import FormatModels
from schemas.prompt_formats import (
    FORMAT_NAMES,
    FORMATS,
    FileLimits,
    PromptLine,
    answer_keys,
    format_line,
    submission_table,
)
from schemas.prompt_formats.base import hashed_id
from tests.batch_run import ROOT
from tests.factories import candidate, document, encoded_prompt_tokens, request
from tests.strategies import catalog_documents, examples, requests
from tests.test_packer_properties import RUNTIME, configs
from transforms.io.prompt_files import WritePromptLines

anthropic_custom_id = FORMATS["anthropic_batch"].request_key
vertex_custom_id = FORMATS["vertex_batch"].request_key
bedrock_record_id = FORMATS["bedrock_batch"].request_key
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

FORMATS_DOC = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")


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
        "max_completion_tokens": 512,
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


def test_bedrock_converse_record() -> None:
    """Bedrock batch inference of invocation type Converse: {recordId, modelInput: Converse}."""
    line = _line("bedrock_converse_batch")
    assert set(line) == {"recordId", "modelInput"}
    assert line["recordId"] == _line("bedrock_batch")["recordId"]
    assert line["modelInput"] == {
        "system": [{"text": "Cite labels."}],
        "messages": [{"role": "user", "content": [{"text": PROMPT.messages[1].content}]}],
        "inferenceConfig": {"maxTokens": 512},
    }


def test_bedrock_batch_record() -> None:
    """Bedrock batch inference: {recordId, modelInput}, the Anthropic InvokeModel body."""
    line = _line("bedrock_batch")
    assert set(line) == {"recordId", "modelInput"}
    assert line["recordId"] == hashed_id("acme-q00", "h")  # a hyphen is not alphanumeric
    assert line["modelInput"] == {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 512,
        "system": "Cite labels.",
        "messages": [{"role": "user", "content": PROMPT.messages[1].content}],
    }
    # The body is the one Anthropic's Messages API takes, bar the model Bedrock sets per job.
    params = _line("anthropic_batch")["params"]
    assert {**line["modelInput"], "model": params["model"]} == {
        **params,
        "anthropic_version": "bedrock-2023-05-31",
    }


# Hyphens, underscores, the hashed shapes and lengths around the limits: every rule's edge.
ids = st.one_of(
    st.text(min_size=1, max_size=120),
    st.text(alphabet="aZ09-_", min_size=1, max_size=70),
    st.builds(
        lambda p, h: p + h,
        st.sampled_from(["h", "h-"]),
        st.text("0123456789abcdef", min_size=31, max_size=33),
    ),
)


@given(ids)
def test_custom_ids_fit_the_provider_rules(request_id: str) -> None:
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", anthropic_custom_id(request_id))
    assert re.fullmatch(r"[a-z0-9_-]{1,63}", vertex_custom_id(request_id))
    assert re.fullmatch(r"[a-zA-Z0-9]{1,64}", bedrock_record_id(request_id))
    assert request_id in answer_keys(request_id)
    assert bedrock_record_id(request_id) in answer_keys(request_id)


@given(ids, ids)
def test_custom_ids_are_one_to_one(a: str, b: str) -> None:
    if a != b:
        assert anthropic_custom_id(a) != anthropic_custom_id(b)
        assert vertex_custom_id(a) != vertex_custom_id(b)
        assert bedrock_record_id(a) != bedrock_record_id(b)


def test_fitting_ids_are_kept_and_others_hashed() -> None:
    assert anthropic_custom_id("Acme_q-01") == "Acme_q-01"
    assert vertex_custom_id("Acme_q-01") == hashed_id("Acme_q-01")  # upper case
    assert anthropic_custom_id("acme/q 1") == hashed_id("acme/q 1")
    looks_hashed = hashed_id("x")
    assert anthropic_custom_id(looks_hashed) == hashed_id(looks_hashed) != looks_hashed
    assert bedrock_record_id("Acme0q01") == "Acme0q01"
    assert bedrock_record_id("acme_q01") == hashed_id("acme_q01", "h")
    assert bedrock_record_id("a" * 65) == hashed_id("a" * 65, "h")
    bedrock_shaped = hashed_id("x", "h")
    assert bedrock_record_id(bedrock_shaped) == hashed_id(bedrock_shaped, "h") != bedrock_shaped


def test_documented_file_limits() -> None:
    limits = {name: f.limits for name, f in FORMATS.items()}
    assert limits["openai_batch"].max_lines == 50_000
    assert limits["openai_batch"].max_bytes == 200_000_000
    assert limits["anthropic_batch"].max_lines == 100_000
    assert limits["anthropic_batch"].max_bytes == 256_000_000
    assert limits["bedrock_batch"].max_lines == 50_000
    assert limits["bedrock_batch"].max_bytes == 1_000_000_000
    assert limits["bedrock_converse_batch"] == limits["bedrock_batch"]
    assert limits["messages"].roll_bytes is None


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
    from transforms.io.prompt_files import prompt_line

    monkeypatch.setattr(FORMATS["openai_batch"], "limits", FileLimits(10, 10_000, 500))
    config = PackingConfig(prompt_format="openai_batch")
    runtime = PackerRuntime.load(config.tokenizer)
    req = request(candidate("e1", text="A passage. " * 60), request_id="q1")
    result = pack_request(req, Catalog([document()]), config, runtime)
    letter = prompt_line(config.format, result.prompt, result.manifest)
    assert isinstance(letter, DeadLetter)
    assert letter.stage == "format" and letter.request_id == "q1"
    assert "exceeds the 500-byte line headroom" in letter.error
    short = pack_request(request(candidate("e1")), Catalog([document()]), config, runtime)
    monkeypatch.setattr(FORMATS["openai_batch"], "limits", FileLimits(10, 1_000_000, 100_000))
    assert isinstance(prompt_line(config.format, short.prompt, short.manifest), PromptLine)


MODELS = FormatModels(
    openai_batch="gpt-4o-mini",
    anthropic_batch="claude-sonnet-4-5",
    vertex_batch="gemini-2.5-flash",
    bedrock_batch="us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    bedrock_converse_batch="us.amazon.nova-pro-v1:0",
)


@settings(max_examples=examples(300))
@given(docs=catalog_documents(), req=requests(), config=configs, fmt=st.sampled_from(FORMAT_NAMES))
def test_the_ledger_counts_each_formats_framing(docs, req, config, fmt: str) -> None:
    """OpenAI: 3 per message with its role, 3 priming; Anthropic (also on Bedrock), Vertex:
    the texts alone. The line of each format carries exactly the ledger's messages."""
    config = PackingConfig.model_validate(
        {**config.model_dump(), "models": MODELS.model_dump(), "prompt_format": fmt}
    )
    result = pack_request(req, Catalog(docs), config, RUNTIME)
    exact = encoded_prompt_tokens(
        RUNTIME.tokens.encoding, result.prompt.messages, FORMATS[fmt].framing
    )
    ledger = result.manifest.budget
    assert exact == result.prompt.prompt_tokens == ledger.prompt_tokens
    assert exact + ledger.reserved_answer <= ledger.input_limit
    text = format_line(result.prompt, ledger.reserved_answer, config.prompt_format)
    read = parse_prompt_line(text)  # every format's line reads back as written
    assert (read.prompt_format, read.key) == (fmt, FORMATS[fmt].request_key(req.request_id))
    user = "".join(m.content for m in result.prompt.messages if m.role == "user")
    assert read.blocks == parse_blocks(user)
    line = json.loads(text)
    body = line.get("modelInput") or line.get("params") or line.get("body") or line
    if "messages" in body:
        texts = [body.get("system", "")] + [m["content"] for m in body["messages"]]
        sent = [t if isinstance(t, str) else "".join(b["text"] for b in t) for t in texts]
        assert "".join(sent) == "".join(m.content for m in result.prompt.messages)
    if fmt == "bedrock_batch":
        assert body["max_tokens"] == ledger.reserved_answer
    if fmt == "bedrock_converse_batch":
        assert body["inferenceConfig"] == {"maxTokens": ledger.reserved_answer}


@given(fmt=st.sampled_from(FORMAT_NAMES))
def test_each_format_asks_for_its_own_model(fmt: str) -> None:
    """One config, several formats: the prompt and its manifest name the format's model."""
    config = PackingConfig(models=MODELS, prompt_format=fmt)  # type: ignore[arg-type]
    expected = getattr(MODELS, fmt, None) or "gpt-4-turbo"
    assert config.format_model == expected
    result = pack_request(request(candidate("e1")), Catalog([document()]), config, RUNTIME)
    assert result.prompt.model == result.manifest.model == expected
    line = json.loads(format_line(result.prompt, 10, config.prompt_format))
    assert (line.get("params") or line.get("body") or {}).get("model", expected) == expected


REAL_MODELS = {
    "anthropic_batch": ["claude-sonnet-4-5", "claude-3-5-haiku-20241022", "claude-opus-4-1"],
    "bedrock_batch": [
        "anthropic.claude-3-haiku-20240307-v1:0",
        "anthropic.claude-3-sonnet-20240229-v1:0:200k",
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-haiku-20240307-v1:0",
        "arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-3-7-sonnet-20250219-v1:0",
    ],
    "vertex_batch": [
        "gemini-2.5-flash",
        "publishers/google/models/gemini-2.0-flash-001",
        "projects/p1/locations/us-central1/publishers/google/models/gemini-2.5-pro",
    ],
    "openai_batch": ["gpt-4-turbo", "gpt-4o-mini", "o3-mini", "ft:gpt-4o-mini:acme::abc123"],
    "bedrock_converse_batch": [
        "amazon.nova-pro-v1:0",
        "us.amazon.nova-lite-v1:0",
        "meta.llama3-1-70b-instruct-v1:0",
        "mistral.mistral-large-2407-v1:0",
        "openai.gpt-oss-120b-1:0",
        "us.deepseek.r1-v1:0",
    ],
}


@given(
    fmt=st.sampled_from(sorted(REAL_MODELS)),
    other=st.sampled_from(sorted(REAL_MODELS)),
    index=st.integers(min_value=0, max_value=9),
)
def test_a_model_fits_only_its_providers_format(fmt: str, other: str, index: int) -> None:
    """Each provider's real model names pass its format; another provider's are refused,
    but for the OpenAI format, the input of OpenAI-compatible servers that take any name,
    and Bedrock's Converse, which takes Bedrock's Anthropic models too."""
    names = REAL_MODELS[other]
    model = names[index % len(names)]
    misfit = FORMATS[fmt].misfit(model)
    if fmt in (other, "openai_batch") or (fmt, other) == (
        "bedrock_converse_batch",
        "bedrock_batch",
    ):
        assert misfit is None
    else:
        assert misfit is not None and repr(model) in misfit
    assert FORMATS["messages"].misfit(model) is None


def test_a_model_that_does_not_fit_is_refused_with_the_setting_to_change() -> None:
    with pytest.raises(ValidationError, match=r"models\.anthropic_batch"):
        PackingConfig(prompt_format="anthropic_batch", model="gpt-4-turbo")  # named, not fit
    for wrong in ("claude-sonnet-4-5", "amazon.nova-pro-v1:0", "meta.llama3-70b-instruct-v1:0"):
        with pytest.raises(ValidationError, match="Bedrock id of an Anthropic model"):
            PackingConfig(prompt_format="bedrock_batch", models=FormatModels(bedrock_batch=wrong))
    with pytest.raises(ValidationError, match=r"models\.vertex_batch: .*'claude-sonnet-4-5'"):
        PackingConfig(models=FormatModels(vertex_batch="claude-sonnet-4-5"))  # not even used
    opaque = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc"
    with pytest.raises(ValidationError):
        PackingConfig(prompt_format="bedrock_batch", model=opaque)
    with pytest.raises(ValueError, match=r"--model gpt-4o: prompt_format vertex_batch needs"):
        load_config(None, "vertex_batch", "gpt-4o")
    assert load_config(None, "openai_batch").format_model == "gpt-4-turbo"


@pytest.mark.parametrize("fmt", FORMAT_NAMES)
def test_a_format_alone_runs_with_its_documented_default_model(fmt: str) -> None:
    """`--prompt_format X` without a config: the format's default model (docs/formats.md's
    table), which its provider takes; a config that names `model` keeps it."""
    config = load_config(None, fmt)
    rule = FORMATS[fmt].models
    expected = rule.default if rule is not None else PackingConfig().model
    assert config.format_model == expected and FORMATS[fmt].misfit(expected) is None
    assert f"| `{fmt}` | `{expected}` |" in FORMATS_DOC or rule is None
    result = pack_request(request(candidate("e1")), Catalog([document()]), config, RUNTIME)
    assert result.manifest.model == result.prompt.model == expected


def test_the_model_flag_is_the_formats_model_and_keeps_the_others(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("model: gpt-4o\nmodels: {vertex_batch: gemini-2.5-pro}\n")
    config = load_config(str(path), "anthropic_batch", "claude-opus-4-1")
    assert config.format_model == "claude-opus-4-1"
    assert config.models.vertex_batch == "gemini-2.5-pro" and config.model == "gpt-4o"
    assert load_config(str(path), None, "gpt-4.1").format_model == "gpt-4.1"  # messages
    other = load_config(str(path), "anthropic_batch", "claude-sonnet-4-5")
    assert other.config_hash() != config.config_hash()  # the model is part of the hash
    with pytest.raises(ValueError, match=r"^--model gpt-4o: prompt_format anthropic_batch needs"):
        load_config(str(path), "anthropic_batch", "gpt-4o")


def test_the_framing_of_each_provider() -> None:
    texts = RUNTIME.tokens.count(PROMPT.messages[0].content) + RUNTIME.tokens.count(
        PROMPT.messages[1].content
    )
    openai = encoded_prompt_tokens(
        RUNTIME.tokens.encoding, PROMPT.messages, FORMATS["openai_batch"].framing
    )
    assert openai == texts + 3 + 2 * 3 + RUNTIME.tokens.count("system") + RUNTIME.tokens.count(
        "user"
    )
    assert (
        encoded_prompt_tokens(
            RUNTIME.tokens.encoding, PROMPT.messages, FORMATS["vertex_batch"].framing
        )
        == texts
    )


def test_the_format_pages_tables_have_a_row_for_every_registered_format() -> None:
    """Adding a format is a module, its registry line and its rows in the docs: the
    formats table, the default models table and the accepted models table name exactly
    the registered formats."""
    page = Path(__file__).resolve().parents[1] / "docs" / "formats.md"
    text = page.read_text(encoding="utf-8")
    tables = [t for t in text.split("\n\n") if t.startswith("| format |")]
    assert len(tables) == 4
    for table in tables:
        rows = [line.split("|")[1] for line in table.splitlines()[2:]]
        assert {n for row in rows for n in re.findall(r"`(\w+)`", row)} == set(FORMAT_NAMES)


def test_every_format_module_is_registered_under_its_own_name() -> None:
    """A format module left out of `FORMATS` would be a format no flag can pick; each
    provider format has its `models.<name>` entry, our own messages none."""
    import importlib

    import schemas.prompt_formats as package

    folder = Path(package.__file__).parent
    modules = {p.stem for p in folder.glob("*.py")} - {"__init__", "base", "results"}
    for name in modules:
        fmt = importlib.import_module(f"schemas.prompt_formats.{name}").FORMAT
        assert FORMATS[name] is fmt and fmt.name == name
    assert set(FORMATS) == modules
    assert set(FormatModels.model_fields) == {n for n, f in FORMATS.items() if f.provider}


def test_the_pack_step_refuses_a_line_past_the_headroom_before_any_row(
    monkeypatch, tmp_path
) -> None:
    """Through the batch job: a request whose line is over the headroom is one `format`
    dead letter, with no prompt, manifest or exclusion of it; the others are written."""
    from tests.batch_run import SAMPLES, flags, read_outputs, run_test_pipeline

    args = ("--prompt_format=openai_batch", "--model=gpt-4o-mini")
    run_test_pipeline(flags(SAMPLES / "requests.jsonl", tmp_path / "all", *args))
    sizes = {
        p["custom_id"]: len(json.dumps(p, ensure_ascii=False).encode("utf-8"))
        for p in read_outputs(tmp_path / "all").prompts
    }
    headroom = sorted(sizes.values())[len(sizes) // 2]
    limits = FORMATS["openai_batch"].limits
    monkeypatch.setattr(
        FORMATS["openai_batch"], "limits", FileLimits(limits.max_lines, limits.max_bytes, headroom)
    )
    run_test_pipeline(flags(SAMPLES / "requests.jsonl", tmp_path / "cut", *args))
    cut = read_outputs(tmp_path / "cut")
    refused = {d["request_id"] for d in cut.dead_letters if d["stage"] == "format"}
    assert refused and {p["custom_id"] for p in cut.prompts} == set(sizes) - refused
    assert {m["request_id"] for m in cut.manifests} == set(sizes) - refused
    assert not refused & {x["request_id"] for x in cut.exclusions}


def test_the_submission_table_of_the_format_page_is_made_from_the_formats() -> None:
    """Regenerate with `python -c 'from schemas.prompt_formats import submission_table;
    print(submission_table())'` and paste it under "Submitting a run"."""
    assert submission_table() in FORMATS_DOC


def test_submit_notes_name_the_model_and_warn_of_a_job_the_provider_refuses() -> None:
    small = {"p/prompts-00000-of-00002.jsonl": 30, "p/prompts-00001-of-00002.jsonl": 100}
    notes = FORMATS["bedrock_batch"].submit_notes("us.anthropic.claude-x-v1:0", small)
    assert "model us.anthropic.claude-x-v1:0 (the lines carry none" in notes[1]
    warnings = [n for n in notes if n.startswith("warning:")]
    assert warnings == [
        "warning: p/prompts-00000-of-00002.jsonl holds 30 records; the provider refuses a "
        "job of fewer than 100: pool them with other runs' prompts before submitting"
    ]
    assert any(n.startswith("ids: ") and "h<32 hex" in n for n in notes)
    openai = FORMATS["openai_responses_batch"].submit_notes("gpt-4o", {"p/a.jsonl": None})
    assert "endpoint /v1/responses" in openai[0] and "(in every line)" in openai[1]
    assert not [n for n in openai if n.startswith(("warning", "ids"))]
    assert FORMATS["messages"].submit_notes("gpt-4o", {"p/a.jsonl": 1}) == []


def test_a_small_bedrock_run_says_what_to_submit_and_that_bedrock_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The sample run makes fewer than 100 prompts: its summary warns of the refusal,
    naming the file and its records, and names the model the job must be created with."""
    from pipelines import cli

    samples = ROOT / "samples"
    args = [
        "batch",
        f"--input={samples / 'requests.jsonl'}",
        f"--catalog={samples / 'catalog.jsonl'}",
    ]
    assert cli.main([*args, f"--output={tmp_path}", "--prompt_format=bedrock_batch"]) == 0
    submit = [
        line.split(None, 1)[1]
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("  submit ")
    ]
    (shard,) = (tmp_path / "prompts").glob("*.jsonl")
    records = len(shard.read_text(encoding="utf-8").splitlines())
    assert 0 < records < 100
    assert f"model {FORMATS['bedrock_batch'].models.default} (the lines carry none" in submit[1]  # type: ignore[union-attr]
    assert submit[-1].startswith(f"warning: {shard} holds {records} records; the provider refuses")


def test_reasoning_headroom_raises_the_output_cap_and_comes_out_of_the_evidence_budget() -> None:
    """A reasoning model's line allows its answer and its hidden reasoning; both come out of
    the context, so the evidence budget shrinks by the headroom; a config without it keeps
    its hash."""
    from transforms.io.prompt_files import prompt_line

    plain = PackingConfig(prompt_format="openai_batch", model="o3", reserved_answer=512)
    thinking = plain.model_copy(update={"reasoning_headroom": 4000})
    req = request(candidate("e1", text="A passage. " * 40), request_id="q1")
    runtime = PackerRuntime.load(plain.tokenizer)
    packed = {
        c.reasoning_headroom: pack_request(req, Catalog([document()]), c, runtime)
        for c in (plain, thinking)
    }
    assert packed[0].manifest.budget.available - packed[4000].manifest.budget.available == 4000
    for headroom, result in packed.items():
        line = prompt_line(plain.format, result.prompt, result.manifest, headroom)
        assert isinstance(line, PromptLine)
        assert json.loads(line.line)["body"]["max_completion_tokens"] == 512 + headroom
    assert "reasoning_headroom" not in plain.canonical_json()  # hashed as before the setting
    assert thinking.config_hash() != plain.config_hash()
    with pytest.raises(ValidationError, match="reasoning_headroom"):
        PackingConfig(input_limit=8192, reserved_answer=1024, reasoning_headroom=7200)
