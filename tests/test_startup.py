"""`evpack` answers `--help` and refuses an unknown flag before Beam loads, from the flag
table, and says exactly what the command itself would say."""

import contextlib
import importlib
import io
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import cli, startup
from pipelines.flag_table import PATH, table_text
from pipelines.options.flags import section_flags
from tests.strategies import examples, markup
from tests.test_cli_help import BEAM_COMMANDS, _sections

ROOT = Path(__file__).resolve().parents[1]
TABLE = startup.read_table()
assert TABLE is not None


def test_the_flag_table_is_current() -> None:
    """Regenerate with `make templates` (python -m pipelines.flag_table)."""
    assert PATH.read_text(encoding="utf-8") == table_text()


@pytest.mark.parametrize("command", sorted(BEAM_COMMANDS))
def test_the_table_holds_exactly_the_flags_a_beam_command_declares(command: str) -> None:
    declared = {
        f"--{flag.name}" for section in _sections(command) for flag in section_flags(section)
    }
    assert set(TABLE["commands"][command]["flags"]) == declared | {"-h", "--help"}


def _direct(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """What the command's own `main` answers, without the table."""
    module = importlib.import_module(cli.COMMANDS[args[0]][0])
    try:
        code = module.main(args[1:])
    except SystemExit as stop:  # argparse's help
        code = stop.code
    out = capsys.readouterr()
    return code, out.out, out.err


def _typo(flag: str) -> str:
    return flag[:-2] + flag[-1] + flag[-2]


@pytest.mark.parametrize("name", sorted(TABLE["commands"]))
def test_an_unknown_flag_is_refused_as_the_command_refuses_it(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = TABLE["commands"][name]
    own = [f for f in entry["flags"] if f.startswith("--") and f != "--help"]
    for flag in (_typo(own[0]), "--no_such_flag", _typo("--runner")):
        args = [*name.split(), flag, "x"]
        assert startup.answer(args) == 2
        early = capsys.readouterr().err
        assert _direct(args, capsys)[0::2] == (2, early), flag


@pytest.mark.parametrize("name", sorted(TABLE["commands"]))
def test_help_is_the_commands_own(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    args = [*name.split(), "--help"]
    assert startup.answer(args) == 0
    early = capsys.readouterr().out
    code, out, _ = _direct(args, capsys)
    assert (code or 0, out) == (0, early)


def test_a_valid_command_line_is_left_to_the_command() -> None:
    assert startup.answer(["batch", "--input", "x", "--runner=DataflowRunner"]) is None
    assert startup.answer(["no-such-command", "--x"]) is None


def test_help_and_a_refused_flag_never_import_beam() -> None:
    code = (
        "import sys, io\n"
        "from contextlib import redirect_stdout as out, redirect_stderr as err\n"
        "from pipelines import cli\n"
        "with out(io.StringIO()), err(io.StringIO()):\n"
        "    codes = [cli.main(['batch', '--help']), cli.main(['replay', '--inptu', 'x']),\n"
        "             cli.main(['report', '--auditt', 'x']), cli.main(['--version'])]\n"
        "print(codes, 'apache_beam' in sys.modules, 'pydantic' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.split() == ["[0,", "2,", "2,", "0]", "False", "False"]


def test_the_startup_bench_prints_a_figure_per_command_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`python -m benchmarks.startup` (in `make bench`): figures, not a timed test."""
    from benchmarks.startup import LINES, main

    assert main(["--repeat", "1"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert [row.split("  ")[1].strip() for row in rows] == [label for label, _ in LINES]
    assert all(float(row.split()[-1 if "missing" in row else -2]) > 0 for row in rows)


def test_a_table_older_than_the_declarations_is_not_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A flag added to an options module and the table not regenerated: the command
    answers itself (slower, never wrong) instead of refusing the new flag."""
    assert startup.answer(["batch", "--brand_new_flag=1"]) == 2  # the table is current
    stale = {**TABLE, "sources_sha256": "0" * 64}
    monkeypatch.setattr(startup, "read_table", lambda: stale)
    assert startup.answer(["batch", "--brand_new_flag=1"]) is None
    assert startup.answer(["batch", "--help"]) is None


@settings(max_examples=examples(300))
@given(
    command=st.sampled_from([*sorted(TABLE["commands"]), "catalog", "nope"]),
    rest=st.lists(
        st.one_of(
            markup,
            st.text().map(lambda t: "--" + t),
            st.sampled_from(["--help", "-h", "--=", "--", "--in\nput"]),
        )
    ),
)
def test_any_command_line_gets_an_answer_or_goes_on(command: str, rest: list[str]) -> None:
    """Whatever follows the command (markup, unicode, bare dashes), the early answer is
    help, a refusal or nothing, and never an exception."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = startup.answer([*command.split(), *rest])
    assert code in (None, 0, 2)
    if code == 2:
        assert len(err.getvalue().splitlines()) == 1
