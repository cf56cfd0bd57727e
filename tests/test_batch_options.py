"""Options: every bad flag fails early with a message that says how to fix it."""

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from pipelines import cli, streaming
from pipelines.options.input import file_format
from pipelines.options.jobs import Settings, resolve
from pipelines.options.packing import parse_event_time
from pipelines.options.runner import BATCH_RUNNER as LOCAL_RUNNER
from pipelines.options.runner import pin_local_runner
from pipelines.schema import DEFAULT_PATH, request_schema_text
from pipelines.verification import verify
from schemas import PackingConfig
from tests.batch_run import SAMPLES

GOOD = [
    f"--input={SAMPLES / 'requests.jsonl'}",
    f"--catalog={SAMPLES / 'catalog.jsonl'}",
    "--output=/tmp/evpack-never-written",
]


def _resolve(*argv: str) -> Settings:
    return resolve(PipelineOptions(list(argv)))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (GOOD[1:], "--input is required, e.g. --input=samples/requests.jsonl"),
        ([GOOD[0], GOOD[2]], "--catalog is required"),
        (GOOD[:2], "--output is required"),
        (["--input=/nonexistent/*.jsonl", *GOOD[1:]], "matches no file; check the path or glob"),
        ([*GOOD, "--max_record_bytes=0"], "--max_record_bytes must be positive"),
        (
            [*GOOD, "--catalog_refresh_seconds=-1"],
            "--catalog_refresh_seconds must be positive, got -1.0; "
            "pass e.g. --catalog_refresh_seconds=60",
        ),
        ([*GOOD, "--event_time=yesterday"], "write e.g. 2026-01-31T12:00:00Z"),
        ([*GOOD, "--config=/nonexistent.yaml"], "cannot be read"),
    ],
)
def test_bad_flags_say_how_to_fix_them(argv: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        _resolve(*argv)


def test_every_command_checks_a_number_flag_alike(capsys: pytest.CaptureFixture[str]) -> None:
    expected = "--max_record_bytes must be positive, got 0; pass e.g. --max_record_bytes=4194304"
    with pytest.raises(ValueError, match=re.escape(expected)):
        _resolve(*GOOD, "--max_record_bytes=0")
    assert verify.main(["--answers=a.jsonl", "--run=out/run1", "--max_record_bytes=0"]) == 2
    assert expected in capsys.readouterr().err
    assert streaming.main(["--max_record_bytes=0"]) == 2
    assert expected in capsys.readouterr().err


def test_unknown_extension_asks_for_the_format_flag() -> None:
    with pytest.raises(ValueError, match=re.escape("pass --input_format=jsonl|parquet")):
        file_format("data/requests.csv", "auto", "input")
    assert file_format("gs://bucket/in/part-0.jsonl.gz", "auto", "input") == "jsonl"
    assert file_format("in/*.parquet", "auto", "input") == "parquet"
    assert file_format("in/*", "parquet", "input") == "parquet"


def test_config_errors_name_the_file_and_the_setting(tmp_path: Path) -> None:
    bad = tmp_path / "config.yaml"
    bad.write_text("input_limit: 100\nreserved_answer: 200\n")
    with pytest.raises(ValueError, match=r"config\.yaml.*reserved_answer \(200\)") as raised:
        _resolve(*GOOD, f"--config={bad}")
    assert "Value error" not in str(raised.value) and "record:" not in str(raised.value)
    bad.write_text("input_limt: 100\n")
    with pytest.raises(ValueError, match="input_limt: Extra inputs are not permitted; did you "):
        _resolve(*GOOD, f"--config={bad}")
    bad.write_text("weights: {relevence: 1}\n")
    with pytest.raises(ValueError, match=r"weights\.relevence: .*; did you mean relevance\?"):
        _resolve(*GOOD, f"--config={bad}")
    bad.write_text("- a list\n")
    with pytest.raises(ValueError, match="must hold a mapping of settings"):
        _resolve(*GOOD, f"--config={bad}")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"input_limit: yes\n", "input_limit: Input should be a valid integer"),
        (b"input_limit: '1000'\n", "input_limit: Input should be a valid integer"),
        (b"input_limit: 99999999999999999999\n", "input_limit: Input should be less than or"),
        (b"weights:\n  relevance: .nan\n", "weights.relevance: Input should be a finite number"),
        (b"enable_dedup: 1\n", "enable_dedup: Input should be a valid boolean"),
        (b"input_limit: 100\ninput_limit: 5000\n", "key 'input_limit' appears twice"),
        (b"model: \xff\n", "is not UTF-8 text"),
        (b"a: " + b"[" * 5000 + b"]" * 5000 + b"\n", "nests too deep to be a config"),
        (b"tokenizer: o200k_base\n", "tokenizer 'o200k_base' is not bundled"),
        (b"tokenizer_file: /nonexistent.tiktoken\n", "'/nonexistent.tiktoken' does not exist"),
    ],
)
def test_a_hostile_config_is_refused_before_the_run(
    tmp_path: Path, text: bytes, message: str
) -> None:
    """Each a config error naming the file and what to fix, not a traceback from a worker."""
    bad = tmp_path / "config.yaml"
    bad.write_bytes(text)
    with pytest.raises(ValueError, match=f"--config '{re.escape(str(bad))}'.*{re.escape(message)}"):
        _resolve(*GOOD, f"--config={bad}")


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (b'{"tenant_id": "t1", "tenant_id": "t2", "document_id": "d"}', "appears twice"),
        (b'{"tenant_id": "t1", "document_id": "d", "x": NaN}', "NaN is not a JSON number"),
        (b'{"tenant_id": "t1", "document_id": "\xff"}', "invalid UTF-8 at byte 36"),
        (
            b'{"tenant_id": "t1", "document_id": "d", "revisions": ['
            b'{"revision_id": "r1", "effective_at": "2026-01-01T00:00:00Z"},'
            b'{"revision_id": "r1", "effective_at": "2027-01-01T00:00:00Z"}]}',
            "revision 'r1' appears twice",
        ),
        (
            b'{"tenant_id": "t1", "document_id": "d", "revisions": ['
            b'{"revision_id": "r1", "effective_at": 1767225600}]}',
            "a timestamp is ISO 8601 text",
        ),
    ],
)
def test_a_bad_side_input_catalog_is_refused_before_the_run(
    tmp_path: Path, row: bytes, message: str
) -> None:
    catalog = tmp_path / "catalog.jsonl"
    catalog.write_bytes((SAMPLES / "catalog.jsonl").read_bytes() + row + b"\n")
    with pytest.raises(ValueError, match=f"catalog {re.escape(str(catalog))}: .*{message}"):
        _resolve(GOOD[0], f"--catalog={catalog}", GOOD[2])


def test_config_json_and_defaults(tmp_path: Path) -> None:
    as_json = tmp_path / "config.json"
    as_json.write_text(json.dumps({"input_limit": 4096, "order_policy": "best_last"}))
    settings = _resolve(*GOOD, f"--config={as_json}")
    assert settings.config == PackingConfig(input_limit=4096, order_policy="best_last")
    assert _resolve(*GOOD).config == PackingConfig()
    sample = _resolve(*GOOD, f"--config={SAMPLES / 'config.yaml'}")
    assert sample.config.input_limit == 1024


def test_event_time_is_utc() -> None:
    assert parse_event_time("2026-01-31T13:00:00+01:00").isoformat() == "2026-01-31T12:00:00+00:00"
    assert parse_event_time("2026-01-31T12:00:00").isoformat() == "2026-01-31T12:00:00+00:00"


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("0001-01-01T00:00:00+05:00", "is outside years 1..9999 in UTC"),
        ("9999-12-31T23:00:00-05:00", "is outside years 1..9999 in UTC"),
        ("1700000000", "a timestamp is ISO 8601 text"),
    ],
)
def test_an_event_time_is_read_as_a_request_timestamp_is(value: str, reason: str) -> None:
    with pytest.raises(ValueError, match=re.escape(reason)):
        parse_event_time(value)


@pytest.mark.parametrize("runner", [None, "DirectRunner", "SwitchingDirectRunner"])
def test_direct_runner_is_pinned_to_the_in_process_runner(runner: str | None) -> None:
    options = PipelineOptions([f"--runner={runner}"] if runner else [])
    pin_local_runner(options, LOCAL_RUNNER)
    assert options.view_as(StandardOptions).runner == LOCAL_RUNNER


def test_other_runners_are_left_alone() -> None:
    options = PipelineOptions(["--runner=DataflowRunner"])
    pin_local_runner(options, LOCAL_RUNNER)
    assert options.view_as(StandardOptions).runner == "DataflowRunner"


def test_cli_reports_bad_flags_and_unknown_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["batch", *GOOD[1:]]) == 2
    assert "--input is required" in capsys.readouterr().err
    assert cli.main(["frobnicate"]) == 2
    assert "unknown command 'frobnicate'" in capsys.readouterr().err
    assert cli.main([]) == 0
    assert "batch" in capsys.readouterr().out
    assert cli.main(["batch", "--help"]) == 0
    assert "--max_record_bytes" in capsys.readouterr().out


def test_committed_json_schema_is_current() -> None:
    assert DEFAULT_PATH.read_text() == request_schema_text(), "run `evpack schema`"
    assert cli.main(["schema", "--check"]) == 0


def test_the_budget_flags_override_the_config_and_its_hash() -> None:
    sample = f"--config={SAMPLES / 'config.yaml'}"
    base = _resolve(*GOOD, sample).config
    flagged = _resolve(
        *GOOD, sample, "--input_limit=2048", "--reserved_answer=0", "--max_evidence_tokens=600"
    ).config
    assert (flagged.input_limit, flagged.reserved_answer, flagged.max_evidence_tokens) == (
        2048,
        0,
        600,
    )
    assert base.input_limit == 1024 and flagged.config_hash() != base.config_hash()
    assert flagged.order_policy == base.order_policy  # the file's other settings stay
    assert _resolve(*GOOD, "--max_evidence_tokens=600").config == PackingConfig(
        max_evidence_tokens=600
    )


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("--input_limit=0", "--input_limit must be positive, got 0; pass e.g. --input_limit=8192"),
        ("--max_evidence_tokens=-1", "pass e.g. --max_evidence_tokens=600"),
        ("--reserved_answer=-1", "--reserved_answer must be 0 or more"),
        ("--reserved_answer=9000", "--reserved_answer 9000: reserved_answer (9000) + "),
    ],
)
def test_a_bad_budget_flag_names_itself_and_the_fix(given: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        _resolve(*GOOD, given)


def test_a_newcomers_run_caps_evidence_by_flag_without_a_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`evpack batch ... --max_evidence_tokens 600`, no config file: every prompt's
    evidence budget is the cap, and the run record names the budget it ran with."""
    out = tmp_path / "run"
    args = ["batch", *GOOD[:2], f"--output={out}", "--max_evidence_tokens", "600"]
    assert cli.main(args) == 0, capsys.readouterr().err
    manifests = pq.read_table(next((out / "manifests").glob("*.parquet"))).to_pylist()
    budgets = [row["budget"] for row in manifests]
    assert budgets and all(b["available"] == 600 >= b["used"] for b in budgets)
    (record,) = (json.loads(p.read_text()) for p in (out / "runs").glob("*.jsonl"))
    assert (record["input_limit"], record["max_evidence_tokens"]) == (8192, 600)
