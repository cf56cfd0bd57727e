"""Answers joined with the run's prompts, manifests (and requests) and verified.

Two joins. Result lines name a request by the id its prompt line carried
(`custom_id`, a Vertex label, or the request id), which may be the mapped id
of `schemas.prompt_formats`; so first every manifest is keyed by each id a provider
may use for it, and answers and prompt lines are resolved to request ids.
Then everything of one request meets: its manifest, prompt blocks, answers,
and, when the request file is given, its candidates' texts and exclusions.
The checks themselves are `packer.verification.checks.verify_answer`.

Answer files are read whole, one file per worker, so each line keeps its
number for the row (`answer_line`); rejected: the byte ranges other inputs
are split into, which cannot know their lines' numbers. Result files are
one batch's answers each, so a file per worker still spreads the work.
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.metrics import Metrics
from apache_beam.typehints.decorators import no_annotations

from packer.parsing.dead_letters import dead_letter
from packer.parsing.names import DEAD_LETTERS, METRICS_NAMESPACE
from packer.parsing.strict_json import Refused, Unreadable, decode_text
from packer.verification.answers import (
    Answer,
    AnswerError,
    PromptText,
    parse_answer_line,
    parse_prompt_line,
)
from packer.verification.checks import DEFAULTS, CheckSettings, checkable_id
from packer.verification.rows import Multiplicity, packet_of, unverified_row, verified_row
from schemas import DeadLetter, ManifestRow
from schemas.prompt_formats import answer_keys
from schemas.verification import VerificationRow
from transforms.bounded_lines import file_lines
from transforms.record_files import matching_files

ROWS = "rows"


def numbered_lines(
    path: str, limit: int | None = None
) -> Iterator[tuple[str, int, bytes | Unreadable]]:
    """(path, 1-based line number, line) for each non-blank line of one JSONL file, read as
    `transforms.record_files` reads any (compressed by its suffix, a line over `limit` bytes
    an `Unreadable` holding its head); an `Unreadable` where reading fails."""
    number = 0
    try:
        for number, line in enumerate(file_lines(path, 0, None, limit), 1):
            if isinstance(line, Unreadable):
                yield path, number, line
            elif line.strip():
                yield path, number, line.removesuffix(b"\n").removesuffix(b"\r")
    except Exception as err:  # any failure to read is this file's dead letter
        reason = f"{path} cannot be read after line {number}: {type(err).__name__}: {err}"
        yield path, number + 1, Unreadable(reason)


class ReadAnswerLines(beam.PTransform):
    """Answer files -> (path, line number, line), one file per worker."""

    def __init__(self, pattern: str, limit: int | None = None) -> None:
        super().__init__()
        self._pattern = pattern
        self._limit = limit

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection:
        return (
            pbegin
            | "AnswerFiles" >> beam.Create(matching_files(self._pattern))
            | "SpreadFiles" >> beam.Reshuffle()
            | "NumberedLines" >> beam.FlatMap(numbered_lines, self._limit)
        )


class _ParseLines(beam.DoFn):
    """(source, line number or None, line) -> parsed value, or a dead letter at `stage`."""

    def __init__(self, stage: str) -> None:
        self._stage = stage

    def process(self, record: tuple[str, int | None, bytes | Unreadable]) -> Iterator[Any]:
        source, number, line = record
        text = decode_text(line)
        if isinstance(text, Refused):
            error, shown = text.reason, text.text
        else:
            try:
                if self._stage == "prompt":
                    yield parse_prompt_line(text)
                else:
                    yield replace(parse_answer_line(text), file=source, line=number)
                return
            except AnswerError as err:
                error, shown = str(err), text
        where = f"{source}:{number}" if number is not None else source
        yield pvalue.TaggedOutput(DEAD_LETTERS, dead_letter(self._stage, error, shown, where, None))


def _resolve(element: tuple[Any, dict[str, Iterable[Any]]]) -> Iterator[Any]:
    """Answers and prompts named by one key -> (request_id, item), or a row / dead letter."""
    key, groups = element
    request_ids = sorted(set(groups["request_ids"]))
    for answer in list(groups["answers"]):
        if len(request_ids) == 1:
            yield request_ids[0], answer
        elif not request_ids:
            yield pvalue.TaggedOutput(
                ROWS,
                unverified_row(answer, "unknown_request", f"no manifest of the run has id {key!r}"),
            )
        else:
            yield pvalue.TaggedOutput(
                ROWS,
                unverified_row(
                    answer,
                    "ambiguous_request",
                    f"id {key!r} names requests {', '.join(request_ids)}",
                ),
            )
    for prompt in list(groups["prompts"]):
        if len(request_ids) == 1:
            yield request_ids[0], prompt
        else:
            yield pvalue.TaggedOutput(
                DEAD_LETTERS,
                dead_letter(
                    "prompt",
                    f"prompt line names {len(request_ids)} manifests by {key!r}",
                    "",
                    "",
                    key,
                ),
            )


class _Verify(beam.DoFn):
    """Everything of one request -> one verification row per answer."""

    def __init__(self, settings: CheckSettings) -> None:
        self._settings = settings
        self._rows = Metrics.counter(METRICS_NAMESPACE, "answers_verified")
        self._failed = Metrics.counter(METRICS_NAMESPACE, "answers_failed_checks")
        self._unanswered = Metrics.counter(METRICS_NAMESPACE, "prompts_unanswered")

    def process(
        self, element: tuple[Any, dict[str, Iterable[Any]]], run_ids: frozenset[str]
    ) -> Iterator[VerificationRow]:
        _, groups = element
        manifests = list(groups["manifests"])
        items = list(groups["items"])
        answers = [i for i in items if isinstance(i, Answer)]
        prompts = [i for i in items if isinstance(i, PromptText)]
        if not answers:
            self._unanswered.inc(len(manifests))
            return
        manifest = manifests[0]
        requests = list(groups.get("requests", []))
        request = requests[0] if requests else None
        packet = None
        if prompts:
            packet = packet_of(manifest, prompts[0], request, list(groups.get("exclusions", [])))
        answers.sort(key=lambda a: (a.file or "", a.line or 0, a.key, a.text))
        for n, answer in enumerate(answers):
            multiplicity = Multiplicity(duplicate=n > 0, answers_for_request=len(answers))
            if answer.status != "succeeded":
                row = unverified_row(answer, answer.status, answer.error, manifest, multiplicity)
            elif packet is None:
                row = unverified_row(
                    answer, "no_prompt", "no prompt line for this request", manifest, multiplicity
                )
            else:
                row = verified_row(answer, manifest, packet, run_ids, multiplicity, self._settings)
                self._rows.inc()
                if not row.passed:
                    self._failed.inc()
            yield row


def run_ids_of(manifest: ManifestRow) -> Iterator[str]:
    """The evidence and document ids a manifest names (the corpus a leak could come from)."""
    for e in manifest.evidence:
        yield from (e.evidence_id, e.document_id, *e.derived_from)


@dataclass(frozen=True)
class VerifyOutputs:
    rows: beam.PCollection[VerificationRow]
    dead_letters: beam.PCollection[DeadLetter]


class VerifyAnswers(beam.PTransform):
    """(numbered answer lines (`ReadAnswerLines`), prompt lines, manifests[, requests,
    exclusions]) -> verification rows, each checked as `settings` say
    (`packer.verification.checks.CheckSettings`) and stamped with the run's `answer_set`."""

    def __init__(
        self,
        prompts: beam.PCollection,
        manifests: beam.PCollection,
        requests: beam.PCollection | None = None,
        exclusions: beam.PCollection | None = None,
        settings: CheckSettings = DEFAULTS,
        answer_set: str | None = None,
    ) -> None:
        super().__init__()
        self._settings = settings
        self._answer_set = answer_set
        self._prompts = prompts
        self._manifests = manifests
        self._requests = requests
        self._exclusions = exclusions

    def _run_ids(self, manifests: beam.PCollection) -> beam.PCollection:
        """The run's checkable evidence and document ids, as one frozenset (a side input)."""
        ids = manifests | "RunIds" >> beam.FlatMap(run_ids_of)
        if self._exclusions is not None:
            extra = self._exclusions | "ExcludedIds" >> beam.FlatMap(
                lambda x: [x.evidence_id, x.document_id or ""]
            )
            ids = (ids, extra) | "AllIds" >> beam.Flatten()
        return (
            ids
            | "Checkable" >> beam.Filter(checkable_id)
            | "Distinct" >> beam.Distinct()
            | "IdSet" >> beam.combiners.ToSet()
            | "Frozen" >> beam.Map(frozenset)
        )

    @no_annotations
    def expand(self, answer_lines: beam.PCollection) -> VerifyOutputs:
        answers = answer_lines | "ParseAnswers" >> beam.ParDo(_ParseLines("answer")).with_outputs(
            DEAD_LETTERS, main="answers"
        )
        prompts = (
            self._prompts
            | "Unnumbered" >> beam.MapTuple(lambda source, line: (source, None, line))
            | "ParsePrompts"
            >> beam.ParDo(_ParseLines("prompt")).with_outputs(DEAD_LETTERS, main="prompts")
        )
        manifests = self._manifests
        key_map = manifests | "AnswerKeys" >> beam.FlatMap(
            lambda m: [(k, m.request_id) for k in answer_keys(m.request_id)]
        )
        resolved = (
            {
                "request_ids": key_map,
                "answers": answers.answers | "KeyAnswers" >> beam.Map(lambda a: (a.key, a)),
                "prompts": prompts.prompts | "KeyPrompts" >> beam.Map(lambda p: (p.key, p)),
            }
            | "JoinKeys" >> beam.CoGroupByKey()
            | "Resolve" >> beam.FlatMap(_resolve).with_outputs(ROWS, DEAD_LETTERS, main="items")
        )
        run_ids = self._run_ids(manifests)
        groups: dict[str, beam.PCollection] = {
            "manifests": manifests | "KeyManifests" >> beam.Map(lambda m: (m.request_id, m)),
            "items": resolved.items,
        }
        if self._requests is not None:
            groups["requests"] = self._requests | "KeyRequests" >> beam.Map(
                lambda r: (r.request_id, r)
            )
        if self._exclusions is not None:
            groups["exclusions"] = self._exclusions | "KeyExclusions" >> beam.Map(
                lambda x: (x.request_id, x)
            )
        rows = (
            groups
            | "JoinRequests" >> beam.CoGroupByKey()
            | "Verify" >> beam.ParDo(_Verify(self._settings), pvalue.AsSingleton(run_ids))
        )
        all_rows = (rows, resolved[ROWS]) | "AllRows" >> beam.Flatten()
        run = {"scope": self._settings.scope, "answer_set": self._answer_set}
        if run != {"scope": "citation", "answer_set": None}:  # rows not checked say it too
            all_rows = all_rows | "RunFields" >> beam.Map(lambda r: r.model_copy(update=run))
        dead = (
            answers[DEAD_LETTERS],
            prompts[DEAD_LETTERS],
            resolved[DEAD_LETTERS],
        ) | "VerifyDeadLetters" >> beam.Flatten()
        return VerifyOutputs(rows=all_rows, dead_letters=dead)
