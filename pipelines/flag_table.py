"""The flag table `pipelines/flags.json`, generated from the commands themselves.

    python -m pipelines.flag_table [--check]     (make templates)

For every command of `evpack` (and subcommand, `catalog load`): the help text the
command prints, at 80 columns, and the flags it accepts, read off that help; for
the commands built on Beam's options, Beam's own flags once, with the Beam version
they were read from; the words flags answer to (`Flag.words`: `--budget`); and the
digest of the files that declare commands, flags and help (each command's module,
`cli.py`, `command.py`, `options/`), so a stale table is never used.
`pipelines.startup` answers `--help` and refuses unknown flags
from it before any heavy import. `--check` only verifies the file is current (a
test does the same). Rejected: a list kept by hand, which drifts as flags are added.
"""

import argparse
import contextlib
import importlib
import io
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.version import __version__ as BEAM_VERSION

from pipelines.cli import COMMANDS
from pipelines.command import CommandParser, declared_flags, flag_parser, run_parsed
from pipelines.options.flags import flag_words
from pipelines.options.help import BEAM_HEADING
from pipelines.startup import TABLE, sources_digest

HERE = Path(__file__).resolve().parent
PATH = HERE / TABLE
_OPTION = re.compile(r"^  ((?:-{1,2}[\w-]+(?: [^,\s]+)?(?:, )?)+)")
_SUBCOMMANDS = re.compile(r"\{([\w,-]+)\} \.\.\.")


def _help(module: str, args: list[str]) -> str:
    """What `evpack <args> --help` prints, at 80 columns."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        importlib.import_module(module).main([*args, "--help"])
    return out.getvalue()


def _flags(text: str) -> list[str]:
    """The flags of a help text's option lines."""
    found = []
    for line in text.splitlines():
        match = _OPTION.match(line)
        if match:
            found += re.findall(r"(?:^|, )(-{1,2}[\w-]+)", match.group(1))
    return found


def table() -> dict[str, Any]:
    """The flag table of the commands as they are declared now."""
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        commands: dict[str, Any] = {}
        for name, (module, _) in COMMANDS.items():
            text = _help(module, [])
            beam = BEAM_HEADING in text
            entry = {"beam": beam, "flags": _flags(text), "help": text}
            commands[name] = entry
            subcommands = _SUBCOMMANDS.search(text)
            for sub in subcommands.group(1).split(",") if subcommands else ():
                sub_text = _help(module, [sub])
                sub_flags = _flags(sub_text)
                entry["flags"] = sorted({*entry["flags"], *sub_flags})
                commands[f"{name} {sub}"] = {
                    "beam": beam,
                    "flags": sorted({*sub_flags, *_flags(text)}),
                    "help": sub_text,
                }
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns
    modules = [importlib.import_module(module).__file__ for module, _ in COMMANDS.values()]
    declaring = [*modules, HERE / "cli.py", HERE / "command.py", *HERE.glob("options/*.py")]
    sources = sorted({str(Path(str(path)).relative_to(HERE)) for path in declaring})
    ours = [c for c in PipelineOptions.__subclasses__() if c.__module__.startswith("pipelines.")]
    return {
        "sources": sources,
        "sources_sha256": sources_digest(sources),
        "beam_version": BEAM_VERSION,
        "beam_flags": sorted(declared_flags(flag_parser(()))),
        "words": flag_words(flag for options in ours for flag in options.FLAGS),
        "commands": commands,
    }


def table_text() -> str:
    """The table as committed (two-space indent, newline)."""
    return json.dumps(table(), indent=2, ensure_ascii=False) + "\n"


def _write(args: argparse.Namespace) -> int:
    text = table_text()
    if args.check:
        if not PATH.exists() or PATH.read_text(encoding="utf-8") != text:
            print(f"{PATH} is stale: run `make templates`", file=sys.stderr)
            return 1
        return 0
    PATH.write_text(text, encoding="utf-8")
    print(f"wrote {PATH}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = CommandParser("python -m pipelines.flag_table", __doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    return run_parsed(parser, _write, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
