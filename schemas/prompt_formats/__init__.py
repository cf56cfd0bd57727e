"""The prompt formats: one packed prompt as the line a batch API takes, and its result read back.

One module per format, each a `PromptFormat` (`base`); `FORMATS` is the
registry every other module reads: the config's `prompt_format` choices and
model rules (`schemas.config`), `--prompt_format`'s choices and help, the
line writer and its file limits, the ledger's framing, and the readers of
prompt and result lines (`packer.verification.answers`). Adding a format is one module
and one line in `FORMATS` (ARCHITECTURE.md, "How to add").
"""

from schemas.outputs import PromptMessage
from schemas.prompt_formats import (
    anthropic_batch,
    bedrock_batch,
    bedrock_converse_batch,
    messages,
    openai_batch,
    openai_responses_batch,
    vertex_batch,
)
from schemas.prompt_formats.base import MB, FileLimits, PromptFormat, PromptLine

FORMATS: dict[str, PromptFormat] = {
    f.name: f
    for f in (
        messages.FORMAT,
        openai_batch.FORMAT,
        openai_responses_batch.FORMAT,
        anthropic_batch.FORMAT,
        vertex_batch.FORMAT,
        bedrock_batch.FORMAT,
        bedrock_converse_batch.FORMAT,
    )
}
"""Every prompt format by name, in the order of `--prompt_format`'s choices (and the
order result lines are tried in: a line a format does not claim goes to the next)."""
FORMAT_NAMES = tuple(FORMATS)


def format_help() -> str:
    """Each format's name and what its line is, for `--prompt_format`'s help."""
    return "; ".join(f"{f.name}: {f.help}" for f in FORMATS.values())


def format_line(prompt: PromptMessage, max_tokens: int, fmt: str) -> str:
    """The prompt as one JSON line (no newline) of the format named `fmt`."""
    return FORMATS[fmt].line(prompt, max_tokens)


def submission_table() -> str:
    """docs/formats.md's submission table, made from each format's `api`, `submission`
    and `limits` (a test keeps the page equal to it): one source for the summary's
    submission notes and the page."""
    rows = [
        "| format | lines valid for | submit | model | per file (one job) |",
        "|---|---|---|---|---|",
    ]
    for f in FORMATS.values():
        sub, limits = f.submission, f.limits
        if sub is None:
            rows.append(
                f"| `{f.name}` | {f.api} | to a service of yours | in every line | no limit |"
            )
            continue
        model = "in every line" if sub.model_in_lines else "named by the job; the lines carry none"
        per_file = f"{limits.max_lines:,} lines, {(limits.max_bytes or 0) // MB:,} MB"
        if sub.min_records:
            per_file += f"; at least {sub.min_records} records, or the job is refused"
        rows.append(f"| `{f.name}` | {f.api} | {sub.how} | {model} | {per_file} |")
    return "\n".join(rows) + "\n"


def answer_keys(request_id: str) -> frozenset[str]:
    """Every id a provider's result line may name this request by."""
    return frozenset(f.request_key(request_id) for f in FORMATS.values())


__all__ = [
    "FORMATS",
    "FORMAT_NAMES",
    "FileLimits",
    "PromptFormat",
    "PromptLine",
    "answer_keys",
    "format_help",
    "format_line",
    "submission_table",
]
