"""`evpack COMMAND --help` lists that command's own options, each with its help text.

Beam's `PipelineOptions` parser prints only `-h`, so a pipeline command that
left `--help` to it would list nothing; a command that printed its docstring
would list only the flags the docstring happens to name.
"""

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines import cli
from pipelines.options.flags import Section, section_flags
from pipelines.options.jobs import JOB_SECTIONS

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


BEAM_COMMANDS = {
    "batch": ("pipelines.batch", "BATCH_SECTIONS"),
    "stream": ("pipelines.streaming", None),
    "verify": ("pipelines.verification.verify", "VERIFY_SECTIONS"),
    "verify-stream": ("pipelines.verification.verify_stream", "VERIFY_STREAM_SECTIONS"),
    "replay": ("pipelines.verification.replay", "REPLAY_SECTIONS"),
}
"""The commands built on Beam's options: their module and the sections their help lists."""


def _sections(command: str) -> tuple[Section, ...]:
    module, name = BEAM_COMMANDS[command]
    if name is None:
        return JOB_SECTIONS["streaming"]
    return getattr(importlib.import_module(module), name)


def full_help(text: str) -> dict[str, str]:
    """Each option with its whole help text, continuation lines joined."""
    flags: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        match = OPTION.match(line)
        if match:
            current = match.group(2)
            flags[current] = match.group(3) or ""
        elif current and re.match(r"^ {8,}\S", line):
            flags[current] += " " + line.strip()
        else:
            current = None
    return {flag: re.sub(r"- (?=[a-z])", "-", words) for flag, words in flags.items()}


@pytest.mark.parametrize("command", sorted(BEAM_COMMANDS))
def test_help_shows_every_default_and_marks_required_flags(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = help_text((command,), capsys)
    shown = full_help(text)
    usage_line = " ".join(text.split("\n\n")[0].split())
    about = importlib.import_module(BEAM_COMMANDS[command][0]).HELP
    for section in _sections(command):
        for flag in section_flags(section):
            described = shown[f"--{flag.name}"]
            if not flag.switch and flag.default is not None:
                assert "default: " in described, (flag.name, described)
            needed = about.required.get(flag.name)
            if needed:
                assert needed in described, (flag.name, described)
            if needed == "required":
                assert f"[--{flag.name} " not in usage_line and f"--{flag.name} " in usage_line


def test_verify_and_replay_describe_shared_flags_in_their_own_words(
    capsys: pytest.CaptureFixture[str],
) -> None:
    batch = full_help(help_text(("batch",), capsys))
    verify = full_help(help_text(("verify",), capsys))
    replay = full_help(help_text(("replay",), capsys))
    assert "verifications/" in verify["--output"] and "replay/" in replay["--output"]
    assert batch["--output"] not in (verify["--output"], replay["--output"])
    assert "config_hash" in replay["--config"]


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


@pytest.mark.parametrize(
    ("args", "required", "defaulted"),
    [
        (("convert",), {"--input", "--output"}, set()),
        (
            ("catalog", "load"),
            {"--catalog", "--bigtable_project", "--bigtable_instance", "--bigtable_table"},
            {"--catalog_format"},
        ),
        (("report",), {"--audit", "--bigquery_dataset"}, {"--last_runs", "--timeout_seconds"}),
    ],
)
def test_plain_commands_mark_required_flags_and_show_defaults(
    args: tuple[str, ...],
    required: set[str],
    defaulted: set[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    shown = full_help(help_text(args, capsys))
    for flag in required:  # or one of a required group: "(required, or --other)"
        assert re.search(r"\(required(, or --\w+)?\)$", shown[flag]), shown[flag]
    for flag in defaulted:
        assert "default: " in shown[flag], shown[flag]
    assert not [f for f, text in shown.items() if f not in required and "(required)" in text]
