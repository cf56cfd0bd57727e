"""How a flag is declared: once, as data the parser, the help, the checks and the templates read.

A `Flag` holds what argparse needs (name, help, default, type, choices), the
bound of a numeric flag, and, for a flag a flex template exposes, how the
template shows it (`Param`). An options class lists its flags in `FLAGS` and
declares them with `declare`; `check_numbers` checks every bounded flag a
command reads, and `pipelines.options.templates` writes `metadata.json` from
the same declarations. Rejected: argparse `type=` checks for the bounds, which
Beam's lenient parser turns into a usage dump and an exit instead of a message
naming the flag; and a label and regex table kept beside the flags, which is
the hand copy the templates used to be.
"""

import argparse
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from apache_beam.options.pipeline_options import PipelineOptions

Bound = Literal["positive", "not negative"]


@dataclass(frozen=True)
class Param:
    """How a flex template shows a flag: its label, the regex the launcher checks the value
    against, Dataflow's parameter type where no other is implied (choices are `ENUM`,
    booleans `BOOLEAN`, numbers `NUMBER`), and the label of each choice."""

    label: str
    regex: str = ""
    """Empty for a flag with choices: the regex is then the choices."""
    param_type: str | None = None
    choice_labels: Mapping[str, str] = field(default_factory=dict)


PROJECT = r"[a-z][a-z0-9-]{4,28}[a-z0-9]"
"""A Google Cloud project id."""
GCS_FILE = r"^gs://[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]/\S+$"
GCS_FOLDER = r"^gs://[a-z0-9][a-z0-9._-]{1,61}[a-z0-9](/\S*)?$"
POSITIVE_INT = r"^[1-9][0-9]{0,9}$"
NATURAL_INT = r"^(0|[1-9][0-9]{0,9})$"


def pubsub_regex(kind: Literal["topics", "subscriptions"]) -> str:
    """A Pub/Sub resource name, projects/<project>/<kind>/<name>."""
    return rf"^projects/{PROJECT}/{kind}/[A-Za-z][A-Za-z0-9._~+%-]{{2,254}}$"


@dataclass(frozen=True)
class Flag:
    """One flag: what argparse declares, the bound of a number, how a template shows it."""

    name: str
    help: str
    default: Any = None
    type: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    bound: Bound | None = None
    switch: bool = False
    """A flag without a value (`--overwrite`): true when given."""
    template: Param | None = None
    words: tuple[str, ...] = ()
    """Other names a user may type for this flag (`budget` for `--input_limit`): a misspelt
    or made-up flag close to one is answered with every flag of the command that has it."""

    example: Any = None
    """The value an out-of-bound error suggests when the flag has no default of its own
    (`--input_limit`: unset, the config's applies)."""

    def out_of_bound(self, value: float | None) -> str | None:
        """What is wrong with `value` and what to pass instead, or None when it is in bound
        (or not given)."""
        if self.bound is None or value is None or value > 0:
            return None
        if value == 0 and self.bound == "not negative":
            return None
        rule = "must be positive" if self.bound == "positive" else "must be 0 or more"
        fallback = self.example if self.default is None else self.default
        suggested = int(fallback) if float(fallback).is_integer() else fallback
        return f"--{self.name} {rule}, got {value}; pass e.g. --{self.name}={suggested}"


def flag_words(flags: Iterable[Flag]) -> dict[str, list[str]]:
    """Each word of `flags` (`Flag.words`), as `--word`, and the flags that answer to it."""
    words: dict[str, list[str]] = {}
    for flag in flags:
        for word in flag.words:
            words.setdefault(f"--{word}", []).append(f"--{flag.name}")
    return words


def beam_option_classes() -> list[type[PipelineOptions]]:
    """Beam's own option classes (runner, project, workers, ...): their flags pass through."""
    return [
        cls for cls in PipelineOptions.__subclasses__() if cls.__module__.startswith("apache_beam.")
    ]


def declare(parser: argparse.ArgumentParser, flags: Sequence[Flag]) -> None:
    """Declare `flags` on `parser` (an options class's `_add_argparse_args`).

    Each options class keeps its own two-line `_add_argparse_args` calling this.
    Rejected: one intermediate base class holding it. Beam's `get_all_options`
    collects only the direct subclasses of `PipelineOptions`, so the flags of a
    class below such a base would be missing from every parse."""
    for flag in flags:
        parser.add_argument(f"--{flag.name}", **argparse_kwargs(flag))


def argparse_kwargs(flag: Flag) -> dict[str, Any]:
    """What `add_argument` takes for `flag` (its parser's and its help's)."""
    kwargs: dict[str, Any] = {"help": flag.help}
    if flag.switch:
        kwargs["action"] = "store_true"
    else:
        kwargs.update(default=flag.default, type=flag.type, choices=flag.choices)
    return kwargs


def parse_bool(value: str) -> bool:
    """A true/false flag value (also 1/0, yes/no)."""
    lowered = value.lower()
    if lowered not in {"true", "false", "1", "0", "yes", "no"}:
        raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")
    return lowered in {"true", "1", "yes"}


def require(value: str | None, flag: str, example: str) -> str:
    """`value`, or a ValueError naming the flag and an example of it."""
    if not value:
        raise ValueError(f"--{flag} is required, e.g. --{flag}={example}")
    return value


Section = tuple[type[PipelineOptions], frozenset[str] | None]
"""An options class whose flags a command reads: all of them (None), or only those named."""


def section_flags(section: Section) -> Iterator[Flag]:
    """The flags of one section, in their class's order."""
    options, names = section
    flags: Sequence[Flag] = options.FLAGS  # type: ignore[attr-defined]
    for flag in flags:
        if names is None or flag.name in names:
            yield flag


def add_section(parser: Any, section: Section) -> None:
    """Declare the flags of one section on `parser` (an argparse parser or group)."""
    declare(parser, list(section_flags(section)))


def check_numbers(options: PipelineOptions, sections: Sequence[Section]) -> None:
    """Raise one ValueError naming each bounded flag of `sections` out of its bound, and
    what to pass; every command checks the numbers it reads this one way."""
    problems = [
        problem
        for section in sections
        for flag in section_flags(section)
        if flag.bound is not None
        and (problem := flag.out_of_bound(getattr(options.view_as(section[0]), flag.name)))
    ]
    if problems:
        raise ValueError("; ".join(problems))
