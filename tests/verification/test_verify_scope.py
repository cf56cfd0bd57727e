"""`evpack verify --scope packet` end to end on real model answers (AttributionBench
claims packed by `evpack batch`), in every result format; and what the summary says about
the scope, unreadable lines and a run without a gate."""

import json
from pathlib import Path

import pytest

from benchmarks import real_answers
from benchmarks.verification import ANSWER_FORMATS, result_line
from packer.verification.answers import parse_prompt_line
from packer.verification.checks import CITATION_CHECKS, GivenPacket, verify_answer
from pipelines.verification import verify
from tests.batch_run import _parquet

FIXTURE = Path(__file__).resolve().parents[1] / "data"
"""Two dozen real AttributionBench records committed with the tests (`real_answers/`, its
README names the source, licence and how they were picked): the suite reads nothing
outside the checkout. Rejected: the full public set beside the project, absent from a
user's clone."""


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[real_answers.Claim]]:
    """The fixture's claims (each with a figure, half of each label), packed for real."""
    claims = [c for c in real_answers.claims_of(real_answers.load(FIXTURE, "dev")) if not c.whole]
    return real_answers.pack(claims, tmp_path_factory.mktemp("real")), claims


def test_the_packet_scope_verifies_real_answers_in_every_result_format(
    real_run: tuple[Path, list[real_answers.Claim]], tmp_path: Path
) -> None:
    run, claims = real_run
    prompts = {
        p.key: p
        for f in run.glob("prompts/*.jsonl")
        for p in map(parse_prompt_line, f.read_text().splitlines())
    }
    lines, expected = [json.dumps({"request_id": "no-such-request", "answer": "It is 5."})], {}
    for claim in claims:
        text = real_answers.plain_answer(claim)
        prompt = prompts[claim.request_id]
        packet = GivenPacket(claim.request_id, prompt.blocks, given=prompt.given)
        expected[claim.request_id] = verify_answer(text, packet, scope="packet").passed
        lines += [result_line(fmt, claim.request_id, text) for fmt in ANSWER_FORMATS]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(f"{line}\n" for line in lines if line))
    out = tmp_path / "verified"
    outcome = verify.run(
        [f"--answers={answers}", f"--run={run}", f"--output={out}", "--scope=packet"]
    )
    rows = _parquet(f"{out}/verifications/answers/*.parquet")
    assert {r["answer_format"] for r in rows} == set(ANSWER_FORMATS)  # with the unknown one
    assert len(rows) == len(claims) * len(ANSWER_FORMATS) + 1
    (unknown,) = [r for r in rows if r["status"] == "unknown_request"]
    assert unknown["scope"] == "packet" and unknown["passed"] is None
    rows.remove(unknown)
    for row in rows:
        assert row["scope"] == "packet" and row["status"] == "succeeded"
        assert row["passed"] == expected[row["request_id"]], row
        skipped = {c["name"] for c in row["checks"] if c["outcome"] == "skip"}
        assert skipped >= CITATION_CHECKS
    assert {r["passed"] for r in rows} == {True, False}  # real answers: some fail, some pass
    assert "scope           packet: every figure" in outcome.summary
    assert "gate            none:" in outcome.summary and "--max_failed" in outcome.summary
    cited = verify.run([f"--answers={answers}", f"--run={run}", f"--output={tmp_path / 'c'}"])
    assert "scope           citation" in cited.summary and "cites_evidence" in cited.summary


def test_unreadable_lines_are_counted_and_gated(
    real_run: tuple[Path, list[real_answers.Claim]], tmp_path: Path
) -> None:
    run, claims = real_run
    good = json.dumps({"request_id": claims[0].request_id, "answer": "Nothing to add."})
    answers = tmp_path / "answers.jsonl"
    answers.write_text(f"{good}\n{{broken\n[]\n")
    common = [f"--answers={answers}", f"--run={run}", "--scope=packet"]
    held = verify.run([*common, f"--output={tmp_path / 'a'}", f"--max_failed={len(claims) + 1}"])
    assert "unreadable      2 lines (answer 2)" in held.summary
    total = 1 + (len(claims) - 1) + 2  # one row, the prompts unanswered, two dead letters
    assert f"{len(claims) + 1} of {total}" in held.summary and not held.gate_exceeded
    exceeded = verify.run([*common, f"--output={tmp_path / 'b'}", f"--max_failed={len(claims)}"])
    assert exceeded.gate_exceeded
