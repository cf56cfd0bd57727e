"""A command's `--help`: the flags of each options class it reads, one section each.

Every flag shows its default, and the flags a command cannot run without are marked
(and shown without brackets in the usage line). A command that reads a flag of a
shared class for its own purpose says so in its own words (`CommandHelp.flags`), so
`evpack verify --help` never describes `--output` as the batch job's.
"""

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pipelines.options.flags import Flag, Section, argparse_kwargs, section_flags


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
        epilog="Standard Beam options (--runner, --direct_num_workers, ...) pass through.",
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
