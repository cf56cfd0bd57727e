"""The README is kept honest: its quick start, output columns, DuckDB queries, and the
dead-letter table of its reference page (docs/dead-letters.md)."""

import re
from pathlib import Path
from typing import get_args

import duckdb
import pytest

from pipelines.batch import run
from schemas import DeadLetter, ExclusionCount, ExclusionRecord, ManifestRow, PromptMessage
from schemas.derive import model_fields
from schemas.outputs import DeadLetterStage
from tests.batch_run import ROOT, SAMPLES, flags, run_test_pipeline

README = (ROOT / "README.md").read_text(encoding="utf-8")
DEAD_LETTERS = (ROOT / "docs" / "dead-letters.md").read_text(encoding="utf-8")
"""The reference page of dead letters, linked from the README."""


def _section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end > 0 else None]


def test_quick_start_is_two_make_targets() -> None:
    block = re.search(r"```sh\n(.*?)```", _section("Quick start"), re.S)
    assert block is not None
    commands = [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "make test" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize(
    ("output", "model"),
    [
        ("prompts/", PromptMessage),
        ("manifests/", ManifestRow),
        ("exclusions/", ExclusionRecord),
        ("exclusion_counts/", ExclusionCount),
        ("dead_letters/", DeadLetter),
    ],
)
def test_outputs_table_lists_every_column(output: str, model: type) -> None:
    row = next(
        line for line in _section("Outputs").splitlines() if line.startswith(f"| `{output}`")
    )
    documented = set(re.findall(r"\w+", row.split("|")[3]))
    for spec in model_fields(model):
        assert spec.name in documented, f"README outputs table misses {output}{spec.name}"
        assert {c.name for c in spec.children} <= documented, spec.name


_TIMING = re.compile(r"evpack: done in [\d.]+ s \([\d.]+ requests/s\)")


def shown_in_order(shown: list[str], printed: list[str]) -> bool:
    """Whether each line `shown` is the next line `printed`: a line `...` skips any number
    of them, a line ending in ` ...` is the start of one."""
    at, skipping = 0, False
    for line in shown:
        if line.strip() == "...":
            skipping = True
            continue
        cut = line.endswith(" ...")
        want = line.removesuffix("...") if cut else line
        found = [
            i
            for i in range(at, len(printed) if skipping else min(at + 1, len(printed)))
            if (printed[i].startswith(want) if cut else printed[i] == want)
        ]
        if not found:
            return False
        at, skipping = found[0] + 1, False
    return True


def test_the_example_summary_is_what_the_demo_prints(tmp_path: Path) -> None:
    """The README's example summary is, line for line and in order, what the demo's first
    command prints (but the timing, and what `...` leaves out)."""
    block = re.search(r"```\n(evpack: done.*?)```", _section("Quick start"), re.S)
    assert block is not None
    demo = (ROOT / "Makefile").read_text().split("\ndemo:")[1]
    assert "--config samples/config.yaml --output $(OUT) --overwrite" in demo
    args = [
        f"--input={SAMPLES / 'requests.jsonl'}",
        f"--catalog={SAMPLES / 'catalog.jsonl'}",
        f"--config={SAMPLES / 'config.yaml'}",
        f"--output={tmp_path}",
    ]
    printed = run(args).summary.render().replace(str(tmp_path), "out/demo").splitlines()
    timing, *shown = block.group(1).splitlines()
    assert _TIMING.fullmatch(timing) and _TIMING.fullmatch(printed[0]), (timing, printed[0])
    assert shown_in_order(shown, printed[1:]), (shown, printed)
    assert not shown_in_order([shown[1], shown[0]], printed[1:])  # order counts
    assert not shown_in_order([shown[0], shown[2]], printed[1:])  # a left-out line needs ...
    assert shown_in_order([shown[0], "  ...", shown[2]], printed[1:])


def test_duckdb_queries_run_on_a_real_output(tmp_path: Path) -> None:
    run_test_pipeline(flags(SAMPLES / "requests.jsonl", tmp_path))
    block = re.search(r"```sql\n(.*?)```", README, re.S)
    assert block is not None
    queries = [q.strip() for q in block.group(1).split(";") if q.strip()]
    assert len(queries) == 4
    for query in queries:
        rows = duckdb.sql(query.replace("out/demo", str(tmp_path))).fetchall()
        assert rows, query


def test_packing_rules_heading_is_there() -> None:
    assert "\n## Packing rules\n" in README


def _dead_letter_table_stages() -> set[str]:
    start = DEAD_LETTERS.index("| stage | reason | why it is refused |")
    rows = DEAD_LETTERS[start:].split("\n\n", 1)[0].splitlines()[2:]
    return {name for row in rows for name in re.findall(r"`([a-z_]+)`", row.split("|")[1])}


def test_the_dead_letter_table_lists_every_stage_and_only_those() -> None:
    """The table, the closed set of stages, and the stages the code names are one set."""
    stages = set(get_args(DeadLetterStage))
    assert _dead_letter_table_stages() == stages
    named = set()
    for path in [*(ROOT / "transforms").glob("*.py"), *(ROOT / "pipelines").glob("*.py")]:
        text = path.read_text(encoding="utf-8")
        named |= set(re.findall(r'_letter\(\s*(?:[\w.]+, )?"([a-z_]+)"', text))
        named |= set(re.findall(r'^[A-Z_]*STAGE = "([a-z_]+)"', text, re.M))
        named |= set(re.findall(r'_ParseLines\("([a-z_]+)"\)', text))
    assert named and named <= stages, named - stages
