"""`evpack COMMAND --help` lists that command's own options, each with its help text.

Beam's `PipelineOptions` parser prints only `-h`, so a pipeline command that
left `--help` to it would list nothing; a command that printed its docstring
would list only the flags the docstring happens to name.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines import cli

ROOT = Path(__file__).resolve().parents[1]

OWN_FLAGS: dict[tuple[str, ...], set[str]] = {
    ("batch",): {"--input", "--output", "--catalog", "--catalog_mode", "--config", "--event_time"},
    ("catalog", "load"): {"--catalog", "--catalog_format", "--bigtable_table"},
    ("schema",): {"--out", "--check"},
    ("convert",): {"--input", "--output", "--question", "--user_id", "--hash_text"},
    ("report",): {"--audit", "--out", "--views"},
    ("stream",): {
        "--subscription",
        "--prompts_topic",
        "--dead_letter_topic",
        "--bigquery_dataset",
        "--window_seconds",
        "--dedup_ttl_seconds",
        "--catalog",
        "--catalog_refresh_seconds",
        "--config",
        "--max_record_bytes",
    },
    ("tables",): {"--dataset", "--table", "--location"},
    ("verify",): {"--answers", "--requests", "--run", "--output", "--bigquery_dataset"},
    ("verify-stream",): {
        "--answers_subscription",
        "--prompts_subscription",
        "--prompt_ttl_seconds",
        "--bigquery_dataset",
    },
    ("replay",): {"--run", "--input", "--catalog", "--config", "--prompt_format", "--output"},
}
"""Per command, flags it reads that its help must list (a sample, not all of them)."""

NOT_READ: dict[tuple[str, ...], set[str]] = {
    ("stream",): {"--input", "--run"},  # --output: windowed audit files
    ("verify",): {"--input", "--catalog", "--subscription"},
    ("verify-stream",): {"--input", "--catalog", "--subscription"},
}
"""Flags of a shared options class that the command ignores, so its help must not list them."""

OPTION = re.compile(r"^  (-h, )?(--[a-z_]+)(?: [A-Z_{][^ ]*)?(?: {2,}(\S.*))?$")
"""An option line of argparse's help: the flag, its metavar, and help text if on the line."""


def help_text(args: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> str:
    try:
        code = cli.main([*args, "--help"])
    except SystemExit as stop:  # argparse exits after printing help
        code = stop.code
    assert code == 0
    return capsys.readouterr().out


def documented_flags(text: str) -> dict[str, str]:
    """Each option of the help, with its help text (on its line or the indented next ones)."""
    lines = text.splitlines()
    flags = {}
    for i, line in enumerate(lines):
        match = OPTION.match(line)
        if match is None:
            continue
        described = match.group(3) or ""
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if not described and re.match(r"^ {8,}\S", following):
            described = following.strip()
        flags[match.group(2)] = described
    return flags


def test_every_command_is_covered() -> None:
    assert {args[0] for args in OWN_FLAGS} == set(cli.COMMANDS)


@pytest.mark.parametrize("args", list(OWN_FLAGS), ids=" ".join)
def test_help_lists_the_commands_own_flags_with_help(
    args: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    text = help_text(args, capsys)
    assert text.startswith(f"usage: evpack {' '.join(args)} "), text[:80]
    flags = documented_flags(text)
    assert OWN_FLAGS[args] <= set(flags), sorted(OWN_FLAGS[args] - set(flags))
    assert not NOT_READ.get(args, set()) & set(flags)
    undocumented = sorted(f for f, described in flags.items() if not described)
    assert not undocumented, f"flags without help text: {undocumented}"


HEAVY_ON_DEMAND = ("datasketch", "scipy", "google.cloud.bigtable")
"""Libraries only some runs need, each ~0.6 s to import: datasketch's band choice
(`packer.sketch.lsh_bands`, at a near tie) and the Bigtable catalog."""


def test_starting_a_command_does_not_import_what_only_some_runs_need() -> None:
    code = (
        "import sys, pipelines.cli, pipelines.batch, pipelines.streaming;"
        f"print([m for m in {HEAVY_ON_DEMAND!r} if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"
