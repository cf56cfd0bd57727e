"""One count of a run's prompts whatever its sink: `evpack verify` of the same answers
against the same run written to files or to BigQuery gives the same summary, line by
line, and the same gate; held prompts are counted apart, never as unanswered."""

import json
from pathlib import Path

import pytest

from benchmarks.verification import ANSWER_FORMATS, result_line
from pipelines.batch import main as batch_main
from pipelines.batch import run
from pipelines.verification import verify
from tests.batch_run import SAMPLES, _parquet, flags, input_lines

HELD = "empty-q"
ABSTAIN = "The sources do not contain the answer."


def _requests(tmp_path: Path) -> Path:
    """The sample requests, and a copy of the first whose every candidate names a document
    the catalog does not know (a prompt without evidence: held with `hold`)."""
    lines = input_lines(SAMPLES / "requests.jsonl")
    first = json.loads(lines[0])
    gone = [{**c, "document_id": f"gone-{k}"} for k, c in enumerate(first["candidates"])]
    path = tmp_path / "requests.jsonl"
    empty = json.dumps({**first, "request_id": HELD, "candidates": gone})
    path.write_text("\n".join([*lines, empty]) + "\n", encoding="utf-8")
    return path


def _compared(summary: str) -> list[str]:
    """The summary's lines but where its rows were written (each run's own folder)."""
    return [line for line in summary.splitlines() if not line.lstrip().startswith("rows ")]


@pytest.mark.emulators
@pytest.mark.parametrize("fmt", ANSWER_FORMATS)
def test_verify_counts_a_run_alike_whether_its_rows_went_to_files_or_bigquery(
    gcp_emulators: object, tmp_path: Path, fmt: str
) -> None:
    dataset = f"{gcp_emulators.project}.verify_counts_{fmt}"  # type: ignore[attr-defined]
    requests = _requests(tmp_path)
    common = (
        f"--prompt_format={'messages' if fmt == 'plain' else fmt}",
        "--prompts_without_evidence=hold",
    )
    files, tables = tmp_path / "files", tmp_path / "tables"
    assert batch_main(flags(requests, files, *common)) == 0
    assert batch_main(flags(requests, tables, *common, f"--bigquery_dataset={dataset}")) == 0
    assert not list(tables.glob("manifests/*"))  # its manifests are in the dataset alone
    ids = sorted(m["request_id"] for m in _parquet(str(files / "manifests" / "*.parquet")))
    answered = [i for i in ids[::2] if i != HELD]
    answers = tmp_path / "answers.jsonl"
    lines = [result_line(fmt, i, ABSTAIN) for i in [*answered, "no-such-request"]]
    answers.write_text("".join(f"{line}\n" for line in lines if line), encoding="utf-8")
    outcomes = [
        verify.run([f"--answers={answers}", f"--run={folder}", "--max_failed=0", *extra])
        for folder, extra in ((files, []), (tables, [f"--bigquery_dataset={dataset}"]))
    ]
    assert _compared(outcomes[0].summary) == _compared(outcomes[1].summary)
    assert outcomes[0].gate_exceeded and outcomes[1].gate_exceeded
    sent = len(ids) - 1
    unanswered = sent - len(answered)
    summary = outcomes[1].summary
    assert f"unanswered      {unanswered} prompts of {sent} had no answer" in summary
    assert "held            1 prompts held, never sent" in summary


def test_held_prompts_are_counted_apart_never_unanswered(tmp_path: Path) -> None:
    out = tmp_path / "run"
    finished = run(flags(_requests(tmp_path), out, "--prompts_without_evidence=hold"))
    packed = finished.summary.prompts_out
    assert f"prompts out      {packed - 1}, held 1" in finished.summary.render()
    ids = {m["request_id"] for m in _parquet(str(out / "manifests" / "*.parquet"))} - {HELD}
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "".join(json.dumps({"request_id": i, "answer": ABSTAIN}) + "\n" for i in sorted(ids))
    )
    outcome = verify.run([f"--answers={answers}", f"--run={out}", "--runner=FnApiRunner"])
    assert f"unanswered      0 prompts of {len(ids)} had no answer" in outcome.summary
    assert "held            1 prompts held, never sent" in outcome.summary
