"""How prompts are packed: the packing config, the prompt format, the token budget, the
event time.

The budget settings a team turns most (`input_limit`, `reserved_answer`,
`max_evidence_tokens`) are flags as well as config settings, so a run needs no config
file to change them; a flag overrides the file, and, like `--model`, is folded into the
config (`config_hash` names it). Rejected: one `--budget` flag taking a mapping, which
no other flag does; `--budget` is a word the three answer to (`Flag.words`).
"""

import argparse
from datetime import UTC, datetime

from apache_beam.options.pipeline_options import PipelineOptions
from pydantic import TypeAdapter, ValidationError

from pipelines.options.flags import GCS_FILE, NATURAL_INT, POSITIVE_INT, Flag, Param, declare
from schemas._types import UtcDatetime
from schemas.prompt_formats import FORMAT_NAMES, FORMATS, format_help

PROMPT_FORMAT_LABELS: dict[str, str] = {name: f.help for name, f in FORMATS.items()}
"""The flex template's label of each prompt format: its own phrase (`PromptFormat.help`)."""


class PackingOptions(PipelineOptions):
    """How prompts are packed."""

    FLAGS = (
        Flag(
            "config",
            "Packing config as YAML or JSON; omitted settings take their defaults.",
            template=Param("Packing config", GCS_FILE, "GCS_READ_FILE"),
        ),
        Flag(
            "prompt_format",
            f"Shape of each prompt line ({format_help()}); default: the config's "
            "prompt_format, messages. Part of config_hash.",
            choices=FORMAT_NAMES,
            template=Param(
                "Prompt format",
                choice_labels=PROMPT_FORMAT_LABELS,
            ),
        ),
        Flag(
            "model",
            "The model the prompts ask for, stamped in the manifests; overrides the "
            "config's models.<format> (model for messages). Default: the config's, else "
            "the format's default (docs/formats.md: claude-sonnet-4-5 for anthropic_batch, "
            "gemini-2.5-flash for vertex_batch, ...). Part of config_hash.",
            template=Param("Model", r"^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,254}$"),
        ),
        *(
            Flag(
                name,
                f"{about}; overrides the config's {name} (docs/config.md; default: the "
                f"config's, else {default}). A request's own budget.{name} still wins. "
                "Part of config_hash.",
                type=int,
                bound=bound,
                example=example,
                template=Param(label, regex),
                words=("budget",),
            )
            for name, about, default, example, bound, label, regex in (
                (
                    "input_limit",
                    "The model's input limit in tokens: the whole prompt fits it",
                    8192,
                    8192,
                    "positive",
                    "Input limit (tokens)",
                    POSITIVE_INT,
                ),
                (
                    "reserved_answer",
                    "Tokens kept for the answer (the provider's output cap)",
                    1024,
                    1024,
                    "not negative",
                    "Tokens reserved for the answer",
                    NATURAL_INT,
                ),
                (
                    "max_evidence_tokens",
                    "A cap on the evidence tokens of each prompt",
                    "no cap",
                    600,
                    "positive",
                    "Evidence token cap",
                    POSITIVE_INT,
                ),
            )
        ),
        Flag(
            "event_time",
            "ISO-8601 time used as event time of requests that carry neither "
            "event_time nor as_of (default: the run's start). Set it to rerun "
            "a job byte for byte.",
            template=Param(
                "Event time",
                r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})?$",
            ),
        ),
    )

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        declare(parser, cls.FLAGS)


_TIMESTAMP = TypeAdapter(UtcDatetime)


def parse_event_time(value: str | None) -> datetime:
    """The given ISO-8601 time in UTC, or now; read as a request's timestamps are."""
    if value is None:
        return datetime.now(UTC)
    try:
        return _TIMESTAMP.validate_python(value)
    except ValidationError as err:
        reason = err.errors(include_url=False)[0]["msg"]
        raise ValueError(
            f"--event_time {value!r} is not ISO-8601 in years 1..9999 ({reason}); "
            "write e.g. 2026-01-31T12:00:00Z"
        ) from err
