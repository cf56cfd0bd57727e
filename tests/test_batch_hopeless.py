"""Hopeless input does not pass as a success: a run that made no prompt, or whose dead
letters are more than `--max_dead_letter_percent` of its records, exits 1, and the summary
names the top errors and what the input looks like instead of requests."""

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packer.parsing.dead_letters import error_kind, input_shape, top_errors
from pipelines.batch import main
from pipelines.run_commit import RunFailed, decide_failure
from pipelines.summary import RunSummary
from tests.batch_run import SAMPLES, flags, input_lines
from tests.strategies import examples, markup
from transforms.io.table_commit import TableRun

REQUEST = json.loads(input_lines(SAMPLES / "requests.jsonl")[0])
LANGCHAIN = {"page_content": "Refunds take 5 days.", "metadata": {"source": "kb/1"}}
LANGCHAIN_SERIALIZED = {
    "lc": 1,
    "type": "constructor",
    "id": ["langchain", "schema", "document", "Document"],
    "kwargs": LANGCHAIN,
}
LLAMAINDEX = {"node": {"id_": "n1", "text": "Refunds take 5 days."}, "score": 0.8}


def test_each_shape_people_have_instead_of_requests_is_recognized() -> None:
    assert input_shape("{") == "pretty_json"
    assert input_shape('  "request_id": "q1",') == "pretty_json"
    assert input_shape("},") == "pretty_json"
    assert input_shape(json.dumps([REQUEST, REQUEST])) == "json_array"
    assert input_shape(json.dumps(LANGCHAIN)) == "langchain"
    assert input_shape(json.dumps(LANGCHAIN_SERIALIZED)) == "langchain"
    assert input_shape(json.dumps([LANGCHAIN])) == "langchain"
    assert input_shape(json.dumps(LLAMAINDEX)) == "llamaindex"
    assert input_shape(json.dumps({"id_": "n1", "text": "x", "class_name": "TextNode"})) == (
        "llamaindex"
    )
    assert input_shape(json.dumps(REQUEST)) is None
    assert input_shape("not json at all") is None


def test_alike_errors_count_as_one_kind() -> None:
    errors = [
        "invalid JSON at line 1 column 2: Expecting property name",
        "invalid JSON at line 1 column 9: Expecting property name",
        "question: Field required",
        "record 'a' too long",
        "record 'b' too long",
        "record 'c' too long",
    ]
    assert error_kind(errors[0]) == error_kind(errors[1])
    assert top_errors(errors, 2) == [
        ("record '...' too long", 3),
        ("invalid JSON at line 1 column N: Expecting property name", 2),
    ]


def test_a_top_error_keeps_the_counts_its_errors_share_and_blanks_ids_and_hashes() -> None:
    """The demo's first top error read `Tuple should have at least N item after
    validation, not N`: the bound a reader needs was blanked with the particulars."""
    tuple_error = "candidates: Tuple should have at least 1 item after validation, not 0"
    digest = hashlib.sha256(b"a").hexdigest()
    errors = [
        tuple_error,
        f"duplicate request_id 'q7': a different record was kept (payload sha256 {digest})",
        "record of 5120 bytes is over --max_record_bytes=4096",
        "record of 9000 bytes is over --max_record_bytes=4096",
    ]
    assert top_errors(errors) == [
        ("record of N bytes is over --max_record_bytes=4096", 2),
        (tuple_error, 1),
        ("duplicate request_id '...': a different record was kept (payload sha256 <hex>)", 1),
    ]


@given(st.lists(st.sampled_from(["at least 1 item", "at least 2 items", "line 3 col 12"])))
def test_a_top_error_is_its_kind_with_the_shared_numbers_put_back(errors: list[str]) -> None:
    """Grouping is unchanged (by kind, every number blanked); only the label keeps more."""
    top = top_errors(errors, n=len(errors))
    kinds = Counter(error_kind(e) for e in errors)
    assert sorted((error_kind(label), n) for label, n in top) == sorted(kinds.items())
    for label, n in top:
        alike = {e for e in errors if error_kind(e) == error_kind(label)}
        assert label == (alike.pop() if len(alike) == 1 else error_kind(label)), (label, n)


def test_hashes_and_the_digits_of_words_are_never_masked_digit_by_digit() -> None:
    cut = "payload cut to its first {} of {} bytes, sha256 {}"
    one = cut.format(1024, 5000, hashlib.sha256(b"a").hexdigest())
    other = cut.format(1024, 7311, hashlib.sha256(b"b").hexdigest())
    assert error_kind(one) == error_kind(other)
    assert error_kind(one) == "payload cut to its first N of N bytes, sha256 <hex>"
    assert error_kind("candidates.3.text_sha256: not utf-8 at byte 17, label E12") == (
        "candidates.N.text_sha256: not utf-8 at byte N, label E12"
    )


@settings(max_examples=examples(300))
@given(
    st.one_of(markup, st.text()),
    st.binary(min_size=1, max_size=8),
    st.binary(min_size=1, max_size=8),
)
def test_a_hash_in_any_error_groups_whole(prefix: str, first: bytes, second: bytes) -> None:
    """Whatever text surrounds it, a hash is blanked whole: never a hex run left
    half masked (`NbcNcNaN`), and errors that differ only in the hash are one kind."""
    one, other = (hashlib.sha256(b).hexdigest() for b in (first, second))
    kinds = {error_kind(f"{prefix} sha256 {h} here") for h in (one, other)}
    assert len(kinds) == 1
    assert "sha256 <hex>" in kinds.pop() or len(prefix) > 100  # the kind is cut at 200


def _run(tmp_path: Path, lines: list[str], *extra: str) -> int:
    path = tmp_path / "in.json"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return main(flags(path, tmp_path / "out", "--input_format=jsonl", *extra))


def test_input_that_makes_no_prompt_exits_1_with_a_hint_per_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        *json.dumps(REQUEST, indent=2).splitlines(),
        json.dumps([REQUEST, REQUEST]),
        json.dumps(LANGCHAIN),
        json.dumps(LLAMAINDEX),
    ]
    assert _run(tmp_path, lines) == 1
    out, err = capsys.readouterr()
    assert f"no prompt was made from {len(lines)} records read" in err
    assert "top error" in out
    for hint in ("pretty-printed JSON", "JSON arrays", "LangChain", "LlamaIndex"):
        assert hint in out and "`evpack convert --input" in out, hint


def test_a_dead_letter_share_above_the_flag_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    requests = input_lines(SAMPLES / "requests.jsonl")
    lines = requests + ["not json"] * (len(requests) + 1)
    assert _run(tmp_path, lines) == 1
    assert "more than --max_dead_letter_percent=50" in capsys.readouterr().err
    assert _run(tmp_path, lines, "--overwrite", "--max_dead_letter_percent=100") == 0
    assert _run(tmp_path, lines, "--overwrite", "--max_dead_letter_percent=-1") == 2


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (["not json"], "no prompt was made"),
        (["not json"] * 40, "more than --max_dead_letter_percent=50"),
    ],
)
def test_a_failed_overwrite_rerun_leaves_the_earlier_run_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: list[str], why: str
) -> None:
    """Every exit-1 gate is decided before the first file moves: the rerun's files stay in
    its staging folder, named, and the earlier run's outputs are byte for byte as they were."""
    requests = input_lines(SAMPLES / "requests.jsonl")
    assert _run(tmp_path, requests) == 0
    out = tmp_path / "out"
    before = {k: v for k, v in _tree(out).items() if not k.startswith(".tmp-")}
    lines = bad if len(bad) == 1 else requests[:3] + bad
    assert _run(tmp_path, lines, "--overwrite") == 1
    err = capsys.readouterr().err
    assert why in err and "nothing of this run was committed" in err
    after = {k: v for k, v in _tree(out).items() if not k.startswith(".tmp-")}
    assert after == before
    staged = [p for p in out.glob(".tmp-*") if str(p) in err]
    assert len(staged) == 1 and list(staged[0].glob("dead_letters/*.jsonl"))


def _summary(prompts: int, letters: int) -> RunSummary:
    return RunSummary(
        records_in=prompts + letters,
        requests_in=prompts,
        prompts_out=prompts,
        candidates_in=0,
        evidence_packed=0,
        evidence_folded=0,
        dead_letters={"parse": letters} if letters else {},
        excluded={},
        prompt_tokens_p50=None,
        prompt_tokens_p95=None,
        prompt_tokens_max=None,
        elapsed_seconds=1.0,
    )


def test_the_exit_1_gates_are_decided_on_the_staged_run_naming_what_stays_untouched() -> None:
    tables = TableRun("p.audit", "nightly", "2026-12-01", "20261203T102000-1a2b3c4d")
    decide_failure(_summary(3, 3), 50, "out/.tmp-x", tables)  # 50%: not over the limit
    for summary, why in ((_summary(0, 2), "no prompt"), (_summary(1, 2), "67% of the records")):
        with pytest.raises(RunFailed) as failed:
            decide_failure(summary, 50, "out/.tmp-x", tables)
        message = str(failed.value)
        assert why in message and "out/.tmp-x/" in message and "tables of p.audit" in message
        assert failed.value.summary is summary
    with pytest.raises(RunFailed, match=r"\(the earlier outputs are as they were\);"):
        decide_failure(_summary(0, 1), 100, "out/.tmp-x", None)
