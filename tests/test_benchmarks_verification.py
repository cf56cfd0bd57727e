"""The verification benchmark on a tiny input in the upstream format: every fault caught."""

import json
from pathlib import Path

import pytest

from benchmarks import report, verification
from tests.test_benchmarks_smoke import _write_data


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write_data(tmp_path_factory.mktemp("data"))


def test_verification_benchmark_writes_its_figures_and_report_section(
    data_dir: Path, tmp_path: Path
) -> None:
    args = ["--data-dir", str(data_dir), "--limit", "3", "--repeats", "1"]
    assert verification.main([*args, "--results", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "verification.json").read_text())
    assert result["requests"] == 9 and result["correct_answers"] == 9
    assert {"unknown_label", "changed_figure", "uncited_factual", "leaked_id"} <= set(
        result["recall"]
    )
    assert all(r["recall"] == 1.0 for r in result["recall"].values()), result["examples_missed"]
    assert result["false_flag_rate"] == 0.0, result["examples_missed"]
    assert result["answers_per_s"] > 0
    page = report.write_report(tmp_path).read_text()
    assert "## Verification of answers" in page and "`changed_figure`" in page


def test_mutants_of_a_correct_answer_change_what_they_claim() -> None:
    packet = verification.Packet(
        request_id="q", blocks={"E1": "It opened on 8 August 2014 with 40 staff."}
    )
    case = verification.Case("t", packet, ("E1",), {"e1": "E1"})
    sentences = verification.correct_answer(case)
    assert sentences == ["It opened on 8 August 2014 with 40 staff [E1]."]
    mutants = dict(verification.mutants(case, sentences, "ev-9"))
    assert mutants["changed_date"] == ["It opened on 9 August 2014 with 40 staff [E1]."]
    assert mutants["unknown_label"] == ["It opened on 8 August 2014 with 40 staff [E2]."]
    assert mutants["leaked_id"][-1] == "See also ev-9."
    assert "changed_figure" not in mutants  # its only number sits next to a date
