"""One runner for every `evpack` command: strict flags, one usage-error type, one logging setup.

Every entry point's `main(argv)` hands its body to `run_command` (commands built
on Beam's `PipelineOptions`) or parses with `CommandParser` (plain argparse
commands). Either way:

- an unknown or misspelt flag stops the command before anything runs, exit 2,
  one line naming the flag and the closest of the command's own flags (never
  one of Beam's, which `--help` lists apart: `--budget` once suggested Beam's
  `--update`). Beam parses its options leniently (an unknown flag is only a
  logged warning, and `--prompt-format` with dashes silently means the default
  format), so the flags are checked here against the command's own options and
  Beam's standard ones;
- a `UsageError` (or any `ValueError` raised while resolving flags) is one line
  on stderr and exit 2; a `CommandFailed` (the run started, then failed) is one
  line and exit 1; missing Google Cloud credentials are one line with the fix;
- logging is configured once, the same way for every command.

Rejected: argparse's own `error()` for the Beam commands (a usage dump of
hundreds of Beam flags, and no suggestion), and keeping `ValueError` as the only
exit-2 channel (pydantic's validation errors are `ValueError`s too, so a bug in
a model could pass as a user's mistake): new code raises `UsageError`.
"""

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from apache_beam.options.pipeline_options import _BeamArgumentParser

from pipelines.options.flags import (
    Section,
    add_section,
    beam_option_classes,
    flag_words,
    section_flags,
)
from pipelines.options.help import CommandHelp, usage
from pipelines.startup import unknown_flag_message

LOG_FORMAT = "%(asctime)s %(levelname)s %(message)s"


class UsageError(ValueError):
    """Something the user must fix in the command line or its inputs: exit 2, one line.

    A `ValueError` so that the checks that predate it, and their tests, keep working.
    """


class CommandFailed(RuntimeError):
    """The command started its work and failed; the message says what it left behind."""


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """A plain command's help as the Beam commands' (`pipelines.options.help`): each flag
    marked when required and showing its default unless its text already names it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        notes = ["required"] if action.required and action.option_strings else []
        if others := getattr(action, "required_unless", None):
            notes = [f"required, or {' or '.join(others)}"]
        default = action.default
        shown = default not in (None, False, argparse.SUPPRESS) and not isinstance(default, list)
        if shown and "default" not in text.lower():
            notes.append("default: %(default)s")
        return f"{text} ({'; '.join(notes)})" if notes else text


class CommandParser(argparse.ArgumentParser):
    """argparse for plain commands: no abbreviations, errors as one-line `UsageError`s."""

    def __init__(self, prog: str, description: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(prog=prog, description=description, allow_abbrev=False, **kwargs)

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        known = self._option_flags()
        unknown_flags = [
            a for a in args or [] if a.startswith("--") and a.split("=", 1)[0] not in known
        ]
        if unknown_flags:  # before argparse complains of a required flag the typo meant
            raise UsageError(unknown_flag_message(unknown_flags, known))
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:
            raise UsageError(unknown_flag_message(unknown, self._option_flags()))
        return parsed

    def _option_flags(self) -> list[str]:
        """Every flag of this parser and of its subcommands (`evpack catalog load`)."""
        flags = []
        for action in self._actions:
            flags += action.option_strings
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    flags += sub._option_flags()
        return flags

    def format_help(self) -> str:
        """The help, each flag of a required group of alternatives marked as required
        unless another of the group is given (argparse marks none of them)."""
        for group in self._mutually_exclusive_groups:
            if group.required:
                for action in group._group_actions:
                    others = [a.option_strings[0] for a in group._group_actions if a is not action]
                    action.required_unless = others  # type: ignore[attr-defined]
        return super().format_help()

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


class _StrictBeamParser(_BeamArgumentParser):
    """Beam's parser (it knows value-provider flags), raising instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def flag_parser(sections: Sequence[Section], *, beam: bool = True) -> _BeamArgumentParser:
    """A parser of the flags of `sections` (and of Beam's own options, with `beam`)."""
    parser = _StrictBeamParser(allow_abbrev=False, add_help=False, conflict_handler="resolve")
    for cls in beam_option_classes() if beam else ():
        cls._add_argparse_args(parser)
    for section in sections:
        add_section(parser, section)
    return parser


def declared_flags(parser: argparse.ArgumentParser) -> list[str]:
    """Every flag `parser` accepts."""
    return [flag for action in parser._actions for flag in action.option_strings]


def check_flags(argv: Sequence[str], sections: Sequence[Section]) -> None:
    """Refuse any argument that is not a flag of `sections` or one of Beam's options.

    Raises `UsageError` naming the first unknown flag and the closest of the command's
    own flags (Beam's are listed apart in `--help`, never suggested); a bad value for a typed flag
    (`--max_record_bytes=abc`) is refused the same way.
    """
    _, unknown = flag_parser(sections).parse_known_args(list(argv))
    if unknown:
        own = declared_flags(flag_parser(sections, beam=False))
        words = flag_words(flag for section in sections for flag in section_flags(section))
        raise UsageError(unknown_flag_message(unknown, own, words))


KNOWN_BEAM_WARNINGS = (
    "Using yield and return in the process method",
    "All input pcollections must have the same window",
)
"""Warnings Beam logs while our graphs are built, known and harmless here, filtered from
every command's output. The first flags a `DoFn.process` that yields and then ends
with a bare `return` (Beam's check cannot tell it from returning a value,
apache/beam#22969); the second a `Flatten` of the dead-letter branches, which differ in
windowing only and are merged into one, as the sinks then write them. Rejected:
silencing Beam's loggers below ERROR, which would hide warnings worth reading."""


class _KnownBeamWarnings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(KNOWN_BEAM_WARNINGS)


class _FilesystemRefusals(logging.Filter):
    """Beam logs every exception a step raises, with its traceback, before re-raising it
    (`DoFnRunner._reraise_augmented`). A filesystem's error (a full disk, a read-only or
    vanished folder, or Beam's own `BeamIOError` when a step finds its files gone) then
    reaches the command, which says it in one line naming the path and the fix
    (`transforms.io.bounded.refusal`, or the lost lock of a vanished `--output`): Beam's
    copy only buries that line. Other errors keep Beam's log."""

    def filter(self, record: logging.LogRecord) -> bool:
        from transforms.io.bounded import is_filesystem_error  # Beam is loaded by now

        error = record.exc_info[1] if record.exc_info else None
        return error is None or not is_filesystem_error(error)


def configure_logging(level: int) -> None:
    """The one logging setup: our messages at `level`, Beam's own only from warnings up,
    without its `KNOWN_BEAM_WARNINGS` and its copies of filesystem refusals."""
    logging.basicConfig(level=level, format=LOG_FORMAT)
    logging.getLogger("apache_beam").setLevel(max(level, logging.WARNING))
    for name, kind in (
        ("apache_beam.transforms.core", _KnownBeamWarnings),
        ("apache_beam.runners.common", _FilesystemRefusals),
    ):
        logger = logging.getLogger(name)
        if not any(isinstance(f, kind) for f in logger.filters):
            logger.addFilter(kind())


def skip_credentials_for_storage_emulator() -> bool:
    """With `STORAGE_EMULATOR_HOST` set, make Beam's `gs://` filesystem connect at once,
    anonymously, as the emulator wants: true when it was set.

    Beam looks for Application Default Credentials before it builds its Cloud Storage
    client, and without any retries for about 20 s, logging a `DefaultCredentialsError`
    traceback each time, before it connects anonymously anyway; it caches the outcome
    once per process. The cache is seeded here with that outcome, "no credentials".
    Rejected: Beam's `--no_auth` (read by the Dataflow client only, not by `gs://`),
    and fake credentials in the environment (they would reach every other client).
    """
    if not os.environ.get("STORAGE_EMULATOR_HOST"):
        return False
    from apache_beam.internal.gcp import auth

    credentials = getattr(auth, "_Credentials", None)
    if credentials is None or not hasattr(credentials, "_credentials_init"):
        return False  # a Beam of another shape: its own lookup runs
    with credentials._credentials_lock:
        credentials._credentials = None
        credentials._credentials_init = True
    return True


CREDENTIALS_FIX = (
    "no Google Cloud credentials found: run `gcloud auth application-default login`, "
    "or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file, or point "
    "BIGQUERY_EMULATOR_HOST / PUBSUB_EMULATOR_HOST / BIGTABLE_EMULATOR_HOST at an emulator"
)


def _is_credentials_error(err: BaseException) -> bool:
    """Missing application-default credentials, however deep the client raised them."""
    try:
        from google.auth.exceptions import DefaultCredentialsError
    except ImportError:  # pragma: no cover - google-auth comes with apache-beam[gcp]
        return False
    seen: BaseException | None = err
    while seen is not None:
        if isinstance(seen, DefaultCredentialsError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def guarded(prog: str, body: Callable[[], int]) -> int:
    """Run `body`, mapping the errors a user can act on to one line and an exit status."""
    try:
        return body()
    except CommandFailed as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 1
    except ValueError as err:  # UsageError, and the checks that predate it
        print(f"{prog}: {err}", file=sys.stderr)
        return 2
    except Exception as err:
        if not _is_credentials_error(err):
            raise
        print(f"{prog}: {CREDENTIALS_FIX}", file=sys.stderr)
        return 2


def run_command(
    prog: str,
    description: str | CommandHelp,
    sections: Sequence[Section],
    body: Callable[[list[str]], int],
    argv: Sequence[str] | None,
    *,
    log_level: int = logging.INFO,
) -> int:
    """The `main` of a command built on `PipelineOptions`: help, strict flags, logging, errors."""
    args = list(sys.argv[1:] if argv is None else argv)
    if {"-h", "--help"} & set(args):
        print(usage(prog, description, sections))
        return 0
    configure_logging(log_level)
    skip_credentials_for_storage_emulator()

    def checked() -> int:
        check_flags(args, sections)
        return body(args)

    return guarded(prog, checked)


def run_parsed(
    parser: CommandParser,
    body: Callable[[argparse.Namespace], int],
    argv: Sequence[str] | None,
    *,
    log_level: int = logging.WARNING,
) -> int:
    """The `main` of a plain argparse command: strict flags, logging, errors (--help exits 0)."""
    args = list(sys.argv[1:] if argv is None else argv)
    configure_logging(log_level)
    skip_credentials_for_storage_emulator()
    return guarded(parser.prog, lambda: body(parser.parse_args(args)))
