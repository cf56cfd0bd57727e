"""What `evpack` answers before a command's heavy imports: `--help` and unknown flags.

Every command reads options declared on Beam's `PipelineOptions` classes, and
importing Beam alone takes 1-3 s, so a misspelt flag was refused, and `--help`
printed, only after that. The flag table (`pipelines/flags.json`) holds each
command's help text and the flags it accepts, generated from the declarations by
`python -m pipelines.flag_table` (`make templates`; a test fails when it is stale),
and is read here with the standard library alone. A flag the table does not know is
refused at once, with the same one line the command itself would print; anything
else (a valid line, a value to check, a path) goes on to the command. Should the
installed Beam differ from the one the table was made with, its flags may differ
too, and an unknown flag is left to the command's own check. Should a file that
declares flags or help (`sources`, listed in the table) differ from when the table
was made (a flag added, the table not yet regenerated), the table is not used at
all: a stale table never refuses a real flag, it only makes the answer slower.

Rejected: option classes free of Beam (every `PipelineOptions` subclass imports
it, and the jobs read their flags through `view_as`), and lazy imports inside
each command (the declarations themselves need Beam).
"""

import difflib
import hashlib
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata, resources
from typing import Any

TABLE = "flags.json"
"""The flag table, package data of `pipelines`."""


def closest(flag: str, known: Iterable[str]) -> str | None:
    """The real flag `flag` most likely meant (dashes read as underscores), if any is close."""
    name = flag.split("=", 1)[0]
    candidates = sorted(set(known))
    folded = {c.replace("-", "_"): c for c in candidates}
    if name.replace("-", "_") in folded and name.startswith("--"):
        return folded[name.replace("-", "_")]
    match = difflib.get_close_matches(name.replace("-", "_"), list(folded), n=1, cutoff=0.6)
    return folded[match[0]] if match else None


def suggestion(flag: str, known: Iterable[str], words: Mapping[str, Sequence[str]]) -> str | None:
    """The real flag(s) `flag` most likely meant: the closest by spelling, else every flag
    answering to the word closest to it (`--bugdet`: the budget flags), if any is close."""
    hint = closest(flag, known)
    if hint is not None:
        return hint
    word = closest(flag, words)
    meant = sorted(set(words[word]) & set(known)) if word is not None else []
    if not meant:
        return None
    return meant[0] if len(meant) == 1 else f"{', '.join(meant[:-1])} or {meant[-1]}"


def unknown_flag_message(
    unknown: Sequence[str],
    known: Iterable[str],
    words: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """One line naming the unknown arguments and, for a flag, the closest real one(s) of
    `known` (the command's own flags: never one of Beam's pass-through flags, which a
    typo of ours would match by chance: `--budget` is not `--update`)."""
    flags = [arg for arg in unknown if arg.startswith("-")]
    if not flags:
        return f"unexpected argument {unknown[0]!r}: every value follows its flag"
    first = flags[0]
    hint = suggestion(first, known, words or {})
    more = f" (and {len(flags) - 1} more)" if len(flags) > 1 else ""
    fix = f"; did you mean {hint}?" if hint else "; see --help for the flags"
    name = first.split("=", 1)[0]
    shown = name if name.isprintable() else repr(name)  # one line, whatever was typed
    return f"unknown flag {shown}{more}{fix}"


def read_table() -> dict[str, Any] | None:
    """The flag table, or None when this install has none."""
    try:
        text = resources.files("pipelines").joinpath(TABLE).read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        return None
    table: dict[str, Any] = json.loads(text)
    return table


def sources_digest(paths: Sequence[str]) -> str:
    """SHA-256 of the `pipelines` files at `paths` (relative), names and bytes."""
    digest = hashlib.sha256()
    root = resources.files("pipelines")
    for path in paths:
        digest.update(path.encode() + b"\0" + root.joinpath(path).read_bytes() + b"\0")
    return digest.hexdigest()


def _beam_version() -> str | None:
    try:
        return metadata.version("apache-beam")
    except metadata.PackageNotFoundError:
        return None


def answer(args: Sequence[str]) -> int | None:
    """Print `--help`, or refuse an unknown flag, from the table: the exit status; None
    when the command itself must answer (`args` is the command and its arguments)."""
    table = read_table()
    if table is None or not args:
        return None
    if sources_digest(table["sources"]) != table["sources_sha256"]:
        return None  # a declaration changed since the table was made
    name = " ".join(args[:2]) if " ".join(args[:2]) in table["commands"] else args[0]
    entry = table["commands"].get(name)
    if entry is None:
        return None
    rest = args[len(name.split()) :]
    wants_help = bool({"-h", "--help"} & set(rest))
    if wants_help and entry["beam"]:  # Beam commands print help whatever else is given
        print(entry["help"], end="")
        return 0
    own: list[str] = entry["flags"]
    known = set(own) | set(table["beam_flags"] if entry["beam"] else ())
    unknown = [a for a in rest if a.startswith("--") and a.split("=", 1)[0] not in known]
    if unknown and (not entry["beam"] or table["beam_version"] == _beam_version()):
        message = unknown_flag_message(unknown, own, table["words"])
        print(f"evpack {args[0]}: {message}", file=sys.stderr)
        return 2
    if wants_help and not unknown:
        print(entry["help"], end="")
        return 0
    return None
