"""The packing-output digests compare a tree with another: same input, same file; the
token counts of the sets are checked against tiktoken's."""

import json
from pathlib import Path

import pytest

from benchmarks import identity, token_counts
from tests.test_benchmarks_smoke import _write_data


def test_digests_are_reproducible_and_tell_outputs_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _write_data(tmp_path / "data")
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    args = ["--data-dir", str(data), "--limit", "2", "--budgets", "60", "2048", "--wide", "12"]
    assert identity.main([*args, "--out", str(first)]) == 0
    assert identity.main([*args, "--out", str(second)]) == 0
    assert first.read_bytes() == second.read_bytes()
    rows = [line.split() for line in first.read_text().splitlines()]
    assert {len(row) for row in rows} == {5}
    named = {row[0] for row in rows}
    assert {*identity.DATASETS, "wide-12"} <= named
    assert any(name.endswith("+negated") for name in named)  # gold sentences took a negation
    assert {row[2] for row in rows} == {"+".join(rules) for rules in identity.RULES}
    assert {"polarity", "slot"} <= {rule for rules in identity.RULES for rule in rules}
    summaries = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert any(s[0].endswith("+negated") and "polarity=" in " ".join(s) for s in summaries)
    by_budget = {b: {(r[0], r[2], r[3]): r[4] for r in rows if r[1] == b} for b in ("60", "2048")}
    assert by_budget["60"].keys() == by_budget["2048"].keys()
    assert by_budget["60"] != by_budget["2048"]  # a budget this small packs other prompts


def test_missing_data_is_an_error_not_a_file(tmp_path: Path) -> None:
    out = tmp_path / "digests.txt"
    assert identity.main(["--data-dir", str(tmp_path / "nowhere"), "--out", str(out)]) == 2
    assert not out.exists()


def test_token_counts_check_every_text_and_prompt_of_the_sets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _write_data(tmp_path / "data")
    assert token_counts.main(["--data-dir", str(data), "--budgets", "60", "2048"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["texts"] > 0 and figures["prompts"] > 0
    wrong = ("texts counted differently", "prompts counted differently", "prompts over budget")
    assert [figures[key] for key in wrong] == [0, 0, 0]
