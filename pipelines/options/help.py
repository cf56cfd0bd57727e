"""A command's `--help`: the flags of each options class it reads, one section each.

Every flag shows its default, and the flags a command cannot run without are marked
(and shown without brackets in the usage line). A command that reads a flag of a
shared class for its own purpose says so in its own words (`CommandHelp.flags`), so
`evpack verify --help` never describes `--output` as the batch job's.
"""

import argparse
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pipelines.options.flags import (
    Flag,
    Section,
    argparse_kwargs,
    beam_option_classes,
    section_flags,
)


@dataclass(frozen=True)
class CommandHelp:
    """What a command's `--help` says beyond its flags' own declarations."""

    description: str
    required: Mapping[str, str] = field(default_factory=dict)
    """Flag name -> `required`, or when it is (`required unless --bigtable_table`)."""
    flags: Mapping[str, str] = field(default_factory=dict)
    """Flag name -> this command's help text of a flag declared for another."""
    titles: Mapping[str, str] = field(default_factory=dict)
    """Options class name -> this command's title of that section."""


def _default(flag: Flag) -> str | None:
    if flag.switch or flag.default is None:
        return None
    value = flag.default
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


def flag_help(flag: Flag, about: CommandHelp) -> str:
    """One flag's help text in this command: its words, its default, whether it is required."""
    text = about.flags.get(flag.name, flag.help)
    default = _default(flag)
    notes = [note for note in (about.required.get(flag.name),) if note]
    if default is not None:
        notes.append(f"default: {default}")
    return f"{text} ({'; '.join(notes)})" if notes else text


BEAM_HEADING = "Beam's own options pass through to the runner (see Beam's docs):"
"""The heading of the list of Beam's flags closing a Beam command's help."""


def beam_epilog() -> str:
    """Beam's flags, apart from the command's own: accepted, passed through, never
    suggested for a typo (`pipelines.startup.unknown_flag_message`). Indented past the
    option column, so no reader of the help takes them for the command's
    (`pipelines.flag_table`). Rejected: the one line naming two of them, which left a
    user guessing which others exist."""
    names = sorted(
        flag for cls in beam_option_classes() for flag in flag_names(cls) if flag.startswith("--")
    )
    lines = textwrap.wrap(" ".join(names), width=76, break_on_hyphens=False)
    return "\n".join([BEAM_HEADING, *(f"    {line}" for line in lines)])


def flag_names(options: type) -> list[str]:
    """The flags an options class declares, read off a parser of its own."""
    parser = argparse.ArgumentParser(add_help=False, conflict_handler="resolve")
    options._add_argparse_args(parser)  # type: ignore[attr-defined]
    return [flag for action in parser._actions for flag in action.option_strings]


def usage(prog: str, description: str | CommandHelp, sections: Sequence[Section]) -> str:
    """Help text of a command built on `PipelineOptions`.

    Beam's own parser would print only `-h`: `PipelineOptions` parses flags
    leniently and leaves `--help` to the caller. Each section is titled by its
    class's docstring (or the command's own title); a command that reads a few flags
    of a shared class names them, so its help lists no flag it ignores.
    """
    about = description if isinstance(description, CommandHelp) else CommandHelp(description)
    parser = argparse.ArgumentParser(
        prog=prog,
        description=about.description,
        epilog=beam_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for section in sections:
        options = section[0]
        title = (options.__doc__ or options.__name__).splitlines()[0].rstrip(".")
        group = parser.add_argument_group(about.titles.get(options.__name__, title))
        for flag in section_flags(section):
            kwargs = argparse_kwargs(flag)
            kwargs["help"] = flag_help(flag, about)
            kwargs["required"] = about.required.get(flag.name) == "required"
            group.add_argument(f"--{flag.name}", **kwargs)
    return parser.format_help()
