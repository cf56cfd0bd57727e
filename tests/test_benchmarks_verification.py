"""The verification benchmark on a tiny input in the upstream format: every fault caught,
no correct answer flagged, whatever its style or result format."""

import json
from pathlib import Path

import pytest

from benchmarks import real_answers, report, verification
from packer.verification.answers import parse_answer_line
from tests.test_benchmarks_smoke import _write_data


def _record(source: str, label: str, question: str, claim: str, *refs: str) -> dict:
    return {
        "id": f"{source}_{claim[:8]}",
        "src_dataset": source,
        "question": question,
        "response": claim,
        "claim": claim,
        "claim_raw_string": claim,
        "references": list(refs),
        "attribution_label": label,
        "citation_links": [],
        "webpage_references": [],
    }


REAL = [
    _record("LFQA", "attributable", "How many?", "It has 130 clubs.", "There are 130 clubs."),
    _record("LFQA", "not attributable", "How many?", "It has 140 clubs.", "There are 130 clubs."),
    _record(
        "LFQA", "attributable", "Is a 12-year-old allowed?", "A 12-year-old is.", "Minors are."
    ),
    _record(
        "HAGRID",
        "attributable",
        "When?",
        "It opened in 1990 [2]. It has one hundred rooms [1].",
        "[1] It has one hundred rooms.",
        "[2] It opened in 1990.",
    ),
    _record("HAGRID", "not attributable", "Who?", "Windows 11 is new [1].", "[1] Windows 10."),
    _record("HAGRID", "not attributable", "Who?", "It was built in 1900 [1]."),
]
"""Real-answer records in AttributionBench's shape: one of each kind the bench counts."""


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = _write_data(tmp_path_factory.mktemp("data"))
    (data / "real_answers").mkdir()
    for split in real_answers.SPLITS:
        path = data / "real_answers" / f"attributionbench_{split}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in REAL))
    return data


def test_verification_benchmark_writes_its_figures_and_report_section(
    data_dir: Path, tmp_path: Path
) -> None:
    args = ["--data-dir", str(data_dir), "--limit", "3", "--repeats", "1", "--wall", "40"]
    assert verification.main([*args, "--results", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "verification.json").read_text())
    assert result["requests"] == 12
    assert result["datasets"] == ["conflict_nq", "hotpotqa", "multihop_rag", "ramdocs"]
    assert {
        "unknown_label",
        "changed_figure",
        "uncited_factual",
        "leaked_id",
        "no_citation",
        "empty_answer",
        "overlong_range",
        "api_errored",
        "api_no_content",
    } <= set(result["recall"])
    assert all(r["recall"] == 1.0 for r in result["recall"].values()), result["examples_missed"]
    assert result["false_flag_rate"] == 0.0, result["examples_missed"]
    assert {"as_taken", "not_covered_phrasing", "hedge_sentence"} <= set(
        result["false_flags_by_style"]
    )
    assert set(result["false_flags_by_format"]) == set(verification.ANSWER_FORMATS)
    assert result["answers_per_s"] > 0 and result["wall"]["answers"] == 40
    real = result["real_answers"]
    for split in real_answers.SPLITS:
        assert real[split]["without_references"] == 1 and real[split]["claims"] == 6
        for scope in real_answers.SCOPES:
            figures = real[split][scope]
            assert figures["attributable"] == 3 and figures["false_flag_rate"] == 0.0, figures
            assert figures["reachable"] == 2 and figures["catch_rate"] == 1.0, figures
    page = report.write_report(tmp_path).read_text()
    assert "## Verification of answers" in page and "`not_covered_phrasing`" in page
    assert "### Real model answers" in page and "| test_ood | packet |" in page


def _case(block: str, uncovered: tuple[str, ...] = ()) -> verification.Case:
    packet = verification.GivenPacket(request_id="q", blocks={"E1": block}, uncovered=uncovered)
    return verification.Case("t", packet, ("E1",), {"e1": "E1"})


def test_mutants_of_a_correct_answer_change_what_they_claim() -> None:
    case = _case("It opened on 8 August 2014 with 40 staff.")
    sentences = verification.correct_answer(case)
    assert sentences == ["It opened on 8 August 2014 with 40 staff [E1]."]
    mutants = dict(verification.mutants(case, sentences, "ev-9", 0))
    assert mutants["changed_date"] == ["It opened on 9 August 2014 with 40 staff [E1]."]
    assert mutants["changed_numeric_date"] == ["It opened on 8/9/2014 with 40 staff [E1]."]
    assert mutants["unknown_label"] == ["It opened on 8 August 2014 with 40 staff [E2]."]
    assert mutants["overlong_range"] == ["It opened on 8 August 2014 with 40 staff [E1-E400]."]
    assert mutants["no_citation"] == ["It opened on 8 August 2014 with 40 staff."]
    assert mutants["leaked_id"][-1] == "See also ev-9."
    assert "changed_figure" not in mutants  # its only number sits next to a date
    assert "reversed_range" not in mutants  # one label: no range to reverse


def test_styles_restate_the_same_values() -> None:
    case = _case("Revenue reached $3,500,000 on 22 December 2019, up 12 percent.")
    sentences = verification.correct_answer(case)
    styled = {
        name: " ".join(out)
        for name, style in verification.STYLES.items()
        if (out := style(case, sentences, 0)) is not None
    }
    assert "12/22/2019" in styled["date_numeric_mdy"]
    assert "22/12/2019" in styled["date_numeric_dmy"]
    assert "12/22/19" in styled["date_numeric_short_year"]
    assert "on Dec. 22, 2019," in styled["date_abbreviated_month"]
    assert "22. Dezember 2019" in styled["date_german_ordinal"]
    assert "$3.5M" in styled["scale_suffix"]
    assert "数字是" in styled["cjk_sentence"]
    assert "[E1-E1]" not in styled.get("citation_range", "")  # no neighbour: no range
    for text in styled.values():
        assert verification.verify_answer(text, case.packet).passed, text
    bumped = verification.mutants(case, sentences, "ev-9", 0)
    assert "$3.5bn" in " ".join(dict(bumped)["changed_scale"])


@pytest.mark.parametrize("fmt", verification.ANSWER_FORMATS)
def test_result_lines_read_back_as_written(fmt: str) -> None:
    line = verification.result_line(fmt, "acme/q 1", "It is so [E1].")
    assert line is not None
    answer = parse_answer_line(line)
    assert (answer.status, answer.text) == ("succeeded", "It is so [E1].")
    for failure, status in (("api_errored", "errored"), ("api_no_content", "no_content")):
        failed = verification.result_line(fmt, "acme/q 1", "x", failure)
        if fmt == "plain":
            assert failed is None  # plain lines have no API status
        else:
            assert failed is not None and parse_answer_line(failed).status == status


def test_a_false_flag_is_told_apart_by_whether_the_references_hold_its_figures() -> None:
    def claim(text: str, reference: str) -> real_answers.Claim:
        return real_answers.Claim("c1", "HAGRID", True, text, "When?", (reference,))

    reference = "[1] The bridge opened in 1932 and carries 160,000 vehicles a day."
    absent = claim("It opened in 1932 and cost $13 million [1].", reference)
    assert real_answers.false_flag_kind(absent, ["figures_supported"]) == "figure absent"
    held = claim("It opened in 1932. It carries 160,000 vehicles a day [1].", reference)
    assert real_answers.false_flag_kind(held, ["factual_sentences_cited"]) == "uncited sentence"
    assert real_answers.false_flag_kind(held, ["figures_supported"]) == "reading"
    quoted = claim('Its motto is "the bridge that carries a city" [1].', reference)
    assert real_answers.false_flag_kind(quoted, ["figures_supported"]) == "quote absent"
    verbatim = claim('It "carries 160,000 vehicles a day" [1].', reference)
    assert real_answers.false_flag_kind(verbatim, ["figures_supported"]) == "reading"
