"""The meaning evaluation runs end to end on a tiny input in the upstream format and
writes what the report needs; its perturbation edits change what they claim to."""

import json
from pathlib import Path

import pytest

from benchmarks import meaning, report
from packer.records import canonical_words
from tests.test_benchmarks_smoke import _write_data


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write_data(tmp_path_factory.mktemp("data"))


TEXT = "The bridge is 120 metres long and opened in 1932."


@pytest.mark.parametrize("edit", sorted(meaning.MEANING_EDITS))
def test_every_meaning_edit_changes_the_canonical_words(edit):
    number = meaning._first_number(TEXT)
    assert number is not None and TEXT[number[0] : number[1]] == "120"
    pair = meaning.MEANING_EDITS[edit](TEXT, number)
    assert pair is not None
    assert canonical_words(pair[0]) != canonical_words(pair[1])


@pytest.mark.parametrize("edit", sorted(meaning.FORMATTING_EDITS))
def test_every_formatting_edit_keeps_the_canonical_words(edit):
    assert canonical_words(meaning.FORMATTING_EDITS[edit](TEXT)) == canonical_words(TEXT)


def test_meaning_eval_writes_its_tables_and_the_report_shows_them(data_dir, tmp_path):
    out = tmp_path / "results" / "meaning.json"
    assert meaning.main(["--data-dir", str(data_dir), "--limit", "2", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    meaning_rows = [r for r in result["perturbation"] if r["kind"] == "meaning"]
    assert meaning_rows and all(r["folded"] in (0.0, None) for r in meaning_rows)
    assert {r["rules"] for r in result["conflicts"]["detection"]} <= set(meaning.RULE_SETS)
    assert {r["candidates"] for r in result["cost"]} == {10, 50}
    assert all(r["ms_per_request"] > 0 for r in result["cost"])
    text = report.write_report(out.parent).read_text()
    assert "Meaning kept" in text and "% folded" in text
