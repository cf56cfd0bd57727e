"""The prompt format interface: what one batch API's lines are, in one object.

A format holds every decision about its provider's files: the line it writes
for a prompt (`line`), the id a line names its request by (`request_key`, the
id rule), the file limits shards roll by (`limits`), the chat framing the
ledger counts (`framing`), the models it may be sent to (`models`), and how a
prompt line and a result line of its own are read back (`prompt_text`,
`read_result`). The registry (`schemas.prompt_formats.FORMATS`) is what
config validation, the flag's choices and help, the writers and `evpack
verify` read. Rejected: one table per fact keyed by format name (line
builders, limits, framing, id rules, model rules, result parsers in five
modules: a new format opened seven files).

A format lives beside the data contract, not in `packer/`, because the
packing config validates its model against the format (`schemas.config`), and
`schemas` imports nothing above it; the lines are serializations of the
`PromptMessage`, as Arrow and BigQuery rows are of the audit models.

Custom ids. A request id that a provider's id rule does not admit is mapped to
`h-` (Bedrock: `h`, a hyphen not being alphanumeric) + the first 32 hex digits
of its SHA-256 (an id that fits but already has that shape is mapped too, so
the map is one-to-one but for a 128-bit collision). The map is a pure function
of the request id: `evpack verify` recomputes it from the manifests, so nothing
else has to carry it. Rejected: dead-lettering such requests (their ids come
from upstream and are often URLs or emails) and a stored map (one more output
to keep in step with the prompts).
"""

import hashlib
import json
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from schemas.outputs import PromptMessage
from schemas.prompt_formats.results import Answer


@dataclass(frozen=True, slots=True)
class Framing:
    """Tokens a chat API adds around the messages: per message, and to prime the reply;
    `count_roles`: whether each message's role word is counted as well."""

    per_message: int = 3
    reply_priming: int = 3
    count_roles: bool = True


OPENAI_FRAMING = Framing()
"""OpenAI's documented count: 3 tokens per message plus 3 to prime the reply."""
TEXTS_ONLY = Framing(per_message=0, reply_priming=0, count_roles=False)
"""A provider that documents no tokens around the message texts (Anthropic, also on
Bedrock, and Vertex AI count with tokenizers of their own: the safety margin covers
their wrapping, README "Token counts per provider")."""


@dataclass(frozen=True)
class FileLimits:
    """A provider's documented limits on one input file (or batch), and our shard roll.

    `line_headroom` is kept below `max_bytes`: a shard rolls once it holds more
    than `max_bytes - line_headroom` bytes, so it can never pass `max_bytes`;
    a longer line is dead-lettered.
    """

    max_lines: int | None
    max_bytes: int | None
    line_headroom: int

    @property
    def roll_bytes(self) -> int | None:
        return None if self.max_bytes is None else self.max_bytes - self.line_headroom


@dataclass(frozen=True)
class Submission:
    """How a run's prompt files become the provider's jobs, and what the provider refuses
    beyond the per-file limits (`FileLimits`): the run's summary says it (`submit_notes`)
    and docs/formats.md's submission table is made from it, so a team submits without
    guesswork."""

    how: str
    """Where the files go and the call that makes a job of each."""
    model_in_lines: bool
    """Whether each line names the model; if not, the job must (Vertex AI, Bedrock)."""
    min_records: int | None = None
    """Records one job needs at least: the provider refuses a smaller job (Bedrock: 100)."""


MB = 1_000_000
LINE_HEADROOM = 8 * MB
"""Longest prompt line a sharded file takes; prompts are kilobytes, not megabytes."""
UNLIMITED = FileLimits(max_lines=None, max_bytes=None, line_headroom=0)


@dataclass(frozen=True)
class ModelRule:
    """The models a provider takes, told from their names, and how to say so when one
    does not fit. Rejected: a list of known model ids (stale within months)."""

    pattern: re.Pattern[str]
    needs: str
    default: str
    """The model a config that names none for this provider asks for: a current model
    of the provider's documented line-up (docs/formats.md), so `--prompt_format`
    alone runs. Rejected: refusing a config without one, which made switching
    format need a config file."""


def hashed_id(request_id: str, prefix: str = "h-") -> str:
    """The mapped id of a request id that a provider's id rules do not admit."""
    return prefix + hashlib.sha256(request_id.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class IdRule:
    """The custom ids a provider takes (`allowed`), and the prefix of a mapped id."""

    allowed: re.Pattern[str]
    prefix: str = "h-"

    def fitted(self, request_id: str) -> str:
        """The request id when `allowed` admits it and it has no hashed shape, else its hash."""
        hashed_shape = re.fullmatch(re.escape(self.prefix) + "[0-9a-f]{32}", request_id)
        if self.allowed.fullmatch(request_id) and not hashed_shape:
            return request_id
        return hashed_id(request_id, self.prefix)


def compact_json(line: dict[str, Any]) -> str:
    """One JSON line as every provider format writes it (UTF-8 kept, no spaces)."""
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


def split_system(prompt: PromptMessage) -> tuple[str, list[dict[str, str]]]:
    """The system text, and the other messages (the APIs that take it apart)."""
    system = "\n\n".join(m.content for m in prompt.messages if m.role == "system")
    rest = [{"role": m.role, "content": m.content} for m in prompt.messages if m.role != "system"]
    return system, rest


class PromptFormat(ABC):
    """One prompt format; a new format is a subclass in a module of its own, registered
    in `schemas.prompt_formats` (ARCHITECTURE.md, "How to add")."""

    name: ClassVar[str]
    """The `prompt_format` setting and `--prompt_format` value that picks it."""
    help: ClassVar[str]
    """What a line is, for `--prompt_format`'s help."""
    api: ClassVar[str]
    """The provider API, and its version where the provider versions it, that this
    format's lines are valid for (tests hold each to the provider's SDK types or
    documented schema; docs/formats.md names it)."""
    provider: ClassVar[bool] = True
    """Whether the line goes to a provider, which may want a model of its own
    (`models.<name>` in the config); our own `messages` has none."""
    limits: ClassVar[FileLimits] = UNLIMITED
    submission: ClassVar[Submission | None] = None
    """How the files are submitted (None: our own lines, for a service of yours)."""
    framing: ClassVar[Framing] = TEXTS_ONLY
    """The chat framing the ledger counts, as the provider documents it."""
    models: ClassVar[ModelRule | None] = None
    """The models the provider takes (None: any name)."""
    ids: ClassVar[IdRule | None] = None
    """The provider's rule for the id a line names its request by (None: any id)."""

    def request_key(self, request_id: str) -> str:
        """The id this format's lines name a request by (`ids`, else the request id)."""
        return self.ids.fitted(request_id) if self.ids is not None else request_id

    def submit_notes(self, model: str, lines: dict[str, int | None]) -> list[str]:
        """What submitting a run's prompt files takes, and a warning for each file the
        provider will refuse; `lines` holds each file's line count (None: not counted)."""
        if self.submission is None or not lines:
            return []
        sub, limits = self.submission, self.limits
        named = (
            "in every line" if sub.model_in_lines else "the lines carry none: name it in the job"
        )
        notes = [
            f"{self.api}: {sub.how}",
            f"model {model} ({named})",
            f"{len(lines)} file(s) to upload, each within {limits.max_lines:,} lines and "
            f"{(limits.max_bytes or 0) // MB:,} MB: " + ", ".join(sorted(lines)),
        ]
        if self.ids is not None:
            notes.append(
                f"ids: a request id the provider does not admit is sent as "
                f"{self.ids.prefix}<32 hex digits of its SHA-256> (evpack verify maps it "
                "back from the manifests)"
            )
        small = {
            f: n for f, n in sorted(lines.items()) if n is not None and n < (sub.min_records or 0)
        }
        notes += [
            f"warning: {path} holds {n} records; the provider refuses a job of fewer than "
            f"{sub.min_records}: pool them with other runs' prompts before submitting"
            for path, n in small.items()
        ]
        return notes

    def misfit(self, model: str) -> str | None:
        """Why the provider would refuse `model`, or None when it may take it."""
        if self.models is not None and not self.models.pattern.fullmatch(model):
            return f"prompt_format {self.name} needs {self.models.needs}, not {model!r}"
        return None

    @abstractmethod
    def line(self, prompt: PromptMessage, max_tokens: int) -> str:
        """The prompt as one JSON line (no newline); `max_tokens` is the answer the
        ledger reserved, so the provider never lets the answer outgrow its room."""

    @abstractmethod
    def prompt_text(self, value: dict[str, Any]) -> tuple[str, str] | None:
        """A prompt line of this format read back: the key it names its request by and
        its user text; None when the line is of another format."""

    def read_result(self, value: dict[str, Any]) -> Answer | None:
        """A result line of this format's API, or None when the line is of another."""
        return None


@dataclass(frozen=True)
class PromptLine:
    """A prompt as written to the generation queue, with its routing facts.

    `conflicts` (label groups) and `uncovered` (facets) travel with the
    streaming prompt message, so answers can be verified without the manifest.
    """

    request_id: str
    tenant_id: str
    builder_version: str
    line: str
    conflicts: tuple[tuple[str, ...], ...] = ()
    uncovered: tuple[str, ...] = ()
    prompt_sha256: str = ""
    """The manifest's `prompt_sha256`: a consumer's deduplication key with the request id."""
