"""Each class of malformed input, through the real job: dead-lettered with a reason, no crash."""

import json
from typing import Any

import pytest

from pipelines.batch import BatchRun, run
from tests.batch_run import SAMPLES, Outputs, flags, input_lines, read_outputs

ENORMOUS = 5 * 1024 * 1024  # above the default --max_record_bytes (4 MiB)


def _sample(request_id: str) -> dict[str, Any]:
    for line in input_lines(SAMPLES / "requests.jsonl"):
        if f'"request_id": "{request_id}"' in line:
            return json.loads(line)
    raise AssertionError(request_id)


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> tuple[BatchRun, Outputs]:
    base = _sample("acme-q01")
    foreign = _sample("globex-q00")["candidates"][0]
    assert foreign["tenant_id"] == "globex"
    huge_text = "lorem ipsum " * (ENORMOUS // 12)
    lines = [
        json.dumps(base),
        '{"request_id": "bad-json", "tenant_id": "acme", ',
        json.dumps({k: v for k, v in base.items() if k != "question"} | {"request_id": "no-q"}),
        json.dumps(base | {"request_id": "wrong-type", "principal": "ana"}),
        json.dumps(base | {"request_id": "empty", "candidates": []}),
        json.dumps(base | {"request_id": "foreign", "candidates": [*base["candidates"], foreign]}),
        json.dumps(base | {"question": base["question"] + " (asked twice)"}),
        json.dumps(
            base
            | {
                "request_id": "enormous",
                "candidates": [base["candidates"][0] | {"text": huge_text}],
            }
        ),
        json.dumps(base | {"request_id": "long-question", "question": "why? " * 3000}),
        json.dumps(base | {"request_id": "only-foreign", "candidates": [foreign]}),
        json.dumps(
            base
            | {
                "request_id": "untagged",
                "facets": ["refunds", "pto"],
                "candidates": [
                    {k: v for k, v in c.items() if k != "query_facets"} for c in base["candidates"]
                ],
            }
        ),
    ]
    tmp = tmp_path_factory.mktemp("malformed")
    path = tmp / "requests.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    # Most records are malformed on purpose: the gate that would fail such a run is lifted.
    finished = run(flags(path, tmp / "out", "--max_dead_letter_percent=100"))
    return finished, read_outputs(tmp / "out")


def _letter(outputs: Outputs, marker: str, stage: str) -> str:
    """The error of the one dead letter whose payload carries `marker`."""
    found = [d for d in outputs.dead_letters if marker in d["payload"] and d["stage"] == stage]
    assert len(found) == 1, (marker, stage, [(d["stage"], d["error"]) for d in found])
    assert found[0]["source"].endswith("requests.jsonl") or stage == "pack"
    return found[0]["error"]


def test_each_malformed_class_has_a_clear_reason(job: tuple[BatchRun, Outputs]) -> None:
    _, out = job
    assert _letter(out, '"bad-json"', "parse").startswith("invalid JSON")
    assert _letter(out, '"no-q"', "validate").startswith("question: Field required")
    assert _letter(out, '"wrong-type"', "validate").startswith("principal:")
    empty = _letter(out, '"empty"', "validate")
    assert empty.startswith("candidates: Tuple should have at least 1 item")
    duplicate = _letter(out, "(asked twice)", "dedupe")
    assert (
        "duplicate request_id 'acme-q01'" in duplicate and "different record was kept" in duplicate
    )
    enormous = _letter(out, '"enormous"', "parse")
    assert enormous.endswith(f"exceeds --max_record_bytes={4 * 1024 * 1024}")
    assert "no room under input_limit" in _letter(out, '"long-question"', "pack")


def test_a_foreign_candidate_is_excluded_not_the_request(job: tuple[BatchRun, Outputs]) -> None:
    _, out = job
    assert "foreign" in {m["request_id"] for m in out.manifests}
    foreign = [
        x for x in out.exclusions if x["request_id"] == "foreign" and x["reason"] == "other_tenant"
    ]
    assert any(x["detail"] == "candidate belongs to another tenant" for x in foreign)


def test_nothing_is_lost_and_the_summary_agrees(job: tuple[BatchRun, Outputs]) -> None:
    finished, out = job
    summary = finished.summary
    assert summary.records_in == 11 == len(out.manifests) + len(out.dead_letters)
    assert summary.prompts_out == len(out.prompts) == 4
    # acme-q01, foreign, only-foreign, untagged, long-question (refused by the packer)
    assert summary.requests_in == 5
    assert summary.dead_letters == {"parse": 2, "validate": 3, "dedupe": 1, "pack": 1}
    assert summary.excluded == _counts(out)
    assert summary.prompt_tokens_p50 is not None and summary.prompt_tokens_p95 is not None
    assert summary.prompt_tokens_p50 <= summary.prompt_tokens_p95 <= summary.prompt_tokens_max  # type: ignore[operator]
    assert "dead letters     7" in summary.render()
    crossed = summary.excluded["other_tenant"]
    assert f"alert            {crossed} candidates belong to another tenant" in summary.render()


def test_prompts_without_evidence_and_untagged_facets_are_alerts(
    job: tuple[BatchRun, Outputs],
) -> None:
    finished, out = job
    manifests = {m["request_id"]: m for m in out.manifests}
    assert manifests["only-foreign"]["evidence"] == []
    assert manifests["untagged"]["facets_untagged"] is True
    assert manifests["untagged"]["uncovered_facets"] == []
    assert not manifests["acme-q01"]["facets_untagged"]
    summary = finished.summary
    assert summary.prompts_without_evidence == sum(not m["evidence"] for m in out.manifests) == 1
    assert summary.facets_untagged == sum(m["facets_untagged"] for m in out.manifests) == 1
    rendered = summary.render()
    assert "alert            1 prompts carry no evidence" in rendered
    assert "alert            1 requests name facets but none of their candidates" in rendered


def _counts(out: Outputs) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in out.exclusions:
        counts[row["reason"]] = counts.get(row["reason"], 0) + 1
    return counts
