"""Streaming verification: answers joined with their prompts in keyed state, with a TTL.

Both arrive as Pub/Sub messages: prompts from a subscription to the
generation topic (the prompt line, with `conflicts` and `uncovered_facets`
attributes), answers from a subscription the result lines are published to.
Keyed by the id the prompt line names its request by (custom_id, Vertex
label or request id: the same id the result line carries), whichever comes
first waits in state; the answer is verified when both are there. State is
cleared once the watermark passes `ttl` after the last element's event time
(Pub/Sub: its publish time); an answer still waiting then becomes a
`no_prompt` row, never dropped. The streaming job writes no manifests to
a place this job could read per element, so the packet is the prompt's
blocks and attributes: the leak check has no corpus ids and is skipped,
as is the excluded-text check.
"""

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.coders import PickleCoder, VarIntCoder
from apache_beam.io.gcp.pubsub import PubsubMessage
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import (
    BagStateSpec,
    ReadModifyWriteStateSpec,
    TimerSpec,
    on_timer,
)
from apache_beam.utils.timestamp import Duration, Timestamp

from packer.parsing.dead_letters import dead_letter
from packer.parsing.names import DEAD_LETTERS, DEFAULT_PROMPT_TTL_SECONDS
from packer.verification.answers import Answer, AnswerError, parse_answer_line, parse_prompt_line
from packer.verification.checks import GivenPacket
from packer.verification.rows import Multiplicity, unverified_row, verified_row
from schemas.verification import VerificationRow

"""How long a prompt waits for its answer: batch APIs answer within 24 hours."""

_PROMPT = ReadModifyWriteStateSpec("prompt", PickleCoder())
_WAITING = BagStateSpec("waiting", PickleCoder())
_SEEN = ReadModifyWriteStateSpec("answers_seen", VarIntCoder())
_EXPIRY = TimerSpec("expiry", TimeDomain.WATERMARK)
_PROMPT_STATE = beam.DoFn.StateParam(_PROMPT)
_WAITING_STATE = beam.DoFn.StateParam(_WAITING)
_SEEN_STATE = beam.DoFn.StateParam(_SEEN)
_EXPIRY_TIMER = beam.DoFn.TimerParam(_EXPIRY)


@dataclass(frozen=True)
class StreamPrompt:
    """What a prompt message tells about its request (the fields rows take from a manifest)."""

    request_id: str
    tenant_id: str
    event_time: datetime | None
    builder_version: str
    config_hash: str | None
    packet: GivenPacket


def _labels(attributes: dict[str, str], name: str) -> Any:
    value = attributes.get(name)
    return json.loads(value) if value else []


def prompt_from_message(message: PubsubMessage) -> tuple[str, StreamPrompt]:
    """(key, prompt) of a generation-topic message; raises AnswerError when unreadable."""
    prompt = parse_prompt_line(message.data.decode("utf-8"))
    attributes = dict(message.attributes or {})
    try:
        conflicts = tuple(tuple(group) for group in _labels(attributes, "conflicts"))
        uncovered = tuple(_labels(attributes, "uncovered_facets"))
    except (json.JSONDecodeError, TypeError) as err:
        raise AnswerError(f"prompt message attributes are not JSON: {err}") from err
    published = message.publish_time
    return prompt.key, StreamPrompt(
        request_id=attributes.get("request_id", prompt.key),
        tenant_id=attributes.get("tenant_id", ""),
        event_time=published,
        builder_version=attributes.get("builder_version", ""),
        config_hash=None,
        packet=GivenPacket(
            request_id=attributes.get("request_id", prompt.key),
            blocks=prompt.blocks,
            given=prompt.given,
            conflicts=tuple(g for g in conflicts if len(g) >= 2),
            uncovered=uncovered,
        ),
    )


class _ParseMessages(beam.DoFn):
    """Pub/Sub messages -> (key, ("prompt" | "answer", value)), or dead letters."""

    def __init__(self, kind: str) -> None:
        self._kind = kind

    def process(self, message: PubsubMessage) -> Iterator[Any]:
        try:
            if self._kind == "prompt":
                key, prompt = prompt_from_message(message)
                yield key, ("prompt", prompt)
            else:
                answer = parse_answer_line(message.data.decode("utf-8"))
                where = f"pubsub:{message.message_id}" if message.message_id else None
                yield answer.key, ("answer", replace(answer, file=where))
        except (AnswerError, UnicodeDecodeError) as err:
            source = f"{self._kind}#{message.message_id or 'unknown'}"
            yield pvalue.TaggedOutput(
                DEAD_LETTERS, dead_letter(self._kind, str(err), message.data, source, None)
            )


def _row(answer: Answer, prompt: StreamPrompt, duplicate: bool) -> VerificationRow:
    multiplicity = Multiplicity(duplicate=duplicate)
    if answer.status != "succeeded":
        return unverified_row(answer, answer.status, answer.error, prompt, multiplicity)
    return verified_row(answer, prompt, prompt.packet, frozenset(), multiplicity)


class JoinAndVerify(beam.DoFn):
    """Keyed by prompt key: hold the prompt or the early answers; verify when both are there.

    Answers wait with whether one for the same key arrived before them (`duplicate`);
    the count lives as long as the key's state, so a retry after the TTL is not marked.
    """

    def __init__(self, ttl_seconds: int) -> None:
        self._ttl = Duration(seconds=ttl_seconds)

    def process(
        self,
        element: tuple[str, tuple[str, Any]],
        prompt_state: Any = _PROMPT_STATE,
        waiting: Any = _WAITING_STATE,
        expiry: Any = _EXPIRY_TIMER,
        seen: Any = _SEEN_STATE,
        timestamp: Timestamp = beam.DoFn.TimestampParam,
    ) -> Iterator[VerificationRow]:
        _, (kind, value) = element
        prompt = prompt_state.read()
        if kind == "prompt":
            if prompt is None:
                prompt_state.write(value)
                expiry.set(timestamp + self._ttl)
            for answer, duplicate in waiting.read():
                yield _row(answer, value, duplicate)
            waiting.clear()
            return
        count = seen.read() or 0
        seen.write(count + 1)
        if prompt is not None:
            yield _row(value, prompt, count > 0)
        else:
            waiting.add((value, count > 0))
            expiry.set(timestamp + self._ttl)

    @on_timer(_EXPIRY)
    def expire(
        self,
        prompt_state: Any = _PROMPT_STATE,
        waiting: Any = _WAITING_STATE,
        seen: Any = _SEEN_STATE,
    ) -> Iterator[VerificationRow]:
        for answer, duplicate in waiting.read():
            yield unverified_row(
                answer,
                "no_prompt",
                "no prompt message arrived within the TTL",
                multiplicity=Multiplicity(duplicate=duplicate),
            )
        waiting.clear()
        prompt_state.clear()
        seen.clear()


@dataclass(frozen=True)
class StreamVerifyOutputs:
    rows: beam.PCollection[VerificationRow]
    dead_letters: beam.PCollection


class VerifyAnswerStream(beam.PTransform):
    """(prompt messages, answer messages) -> verification rows and dead letters."""

    def __init__(self, prompts: beam.PCollection, ttl_seconds: int = DEFAULT_PROMPT_TTL_SECONDS):
        super().__init__()
        self._prompts = prompts
        self._ttl = ttl_seconds

    def expand(self, answers: beam.PCollection) -> StreamVerifyOutputs:  # type: ignore[override]
        prompts = self._prompts | "ParsePrompts" >> beam.ParDo(
            _ParseMessages("prompt")
        ).with_outputs(DEAD_LETTERS, main="keyed")
        parsed = answers | "ParseAnswers" >> beam.ParDo(_ParseMessages("answer")).with_outputs(
            DEAD_LETTERS, main="keyed"
        )
        rows = (
            (prompts.keyed, parsed.keyed)
            | "Both" >> beam.Flatten()
            | "JoinAndVerify" >> beam.ParDo(JoinAndVerify(self._ttl))
        )
        letters = (prompts[DEAD_LETTERS], parsed[DEAD_LETTERS]) | "DeadLetters" >> beam.Flatten()
        return StreamVerifyOutputs(rows=rows, dead_letters=letters)
