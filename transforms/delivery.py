"""A batch run's prompts to `--prompts_topic`, published only once the run is committed.

Every check that can refuse a batch run (the dead-letter gate, a run that
made no prompt, the commit itself) is made before the first publish: the
pipeline stages its prompts in the run's staging folder as `outbox/` files
(`QueuedPrompt` rows), committed with the other outputs, and this step,
run after the commit, publishes them (`transforms.io.publish`: bounded
retries, an outcome per message), `BATCH` prompts (one Publish request) at a
time. What it did is written beside the run's outputs under
`<output>/deliveries/`, files of each batch of each attempt, each written whole
(closed) before the next step:

- `intents-<run>-<attempt>-<batch>.jsonl`, before the batch is sent: an
  `intended` `Delivery` row per prompt about to be sent, with its `dedup_id`;
- `deliveries-<run>-<attempt>-<batch>.jsonl`, once the topic answered: a
  `Delivery` row per prompt delivered (with its message id) or found delivered
  already;
- `dead_letters-<run>-<attempt>-<batch>.jsonl`: a `publish` dead letter per
  prompt the topic refused, the message kept whole (`unpublished`), so it can
  be sent again.

Exactly once as far as the queue allows: a delivery cut off (killed, or its
sink stopped answering) between sending a batch and recording it leaves that
batch's intents without outcomes. A rerun sends every prompt with no recorded
message id, those again with the `dedup_id` of the intent (the run id and
request id of the attempt that first meant to send it), so a consumer drops
the second copy. At most one batch, `BATCH` prompts, can reach the topic twice
per cut-off delivery (more copies of those, when the topic took a request whose
answer was lost and the publisher retried it: the same `dedup_id` on each).
Rejected: one record file per attempt appended as prompts go (on Cloud Storage
an object exists only once closed: a kill lost the whole attempt's record, and
a local file's buffer lost its tail: 6 of 1,000 sent twice); a record per
prompt (a file per message).

A prompt is a duplicate when an earlier delivery under the same `--output`
holds its request id and prompt hash: it is counted, not sent again, so a
rerun with `--overwrite` (after fixing the topic, or a refused run) sends
only what no run delivered. `deliveries/` is not among the run's outputs:
the commit of a rerun leaves it, and the run record does not list it.
Each message carries `run_id` and `prompt_sha256`, so a consumer also drops
copies sent from another `--output` or by a retried step.

Dataflow: the launcher does not wait for the job, so the job runs this step
itself on a worker right after its own commit (`pipelines.batch`); a retried
step finds the first attempt's deliveries and sends nothing twice (a worker
killed while publishing leaves no record of what it sent on Cloud Storage,
where an object appears only once closed: the consumer's deduplication on
the attributes covers that case).

Rejected: publishing from the pipeline (a refused run had published every
prompt; a rerun published them all again); publishing in the launcher before
the commit, once the gates pass (the commit can still be refused, e.g.
another run committed meanwhile); Pub/Sub's own exactly-once (it is a
subscription setting of the consumer's, and covers redeliveries, not a
publisher's second copy).
"""

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from itertools import count, islice

from apache_beam.io.filesystems import FileSystems

from schemas import DeadLetter
from schemas.outputs import Delivery, QueuedPrompt
from schemas.prompt_formats import PromptLine
from schemas.run import new_run_id
from transforms.io.bounded import Step, unbounded
from transforms.io.publish import Publisher, Refusal, unpublished
from transforms.io.pubsub import dedup_id, prompt_message
from transforms.io.row_files import output_prefix
from transforms.record_files import file_records, matching_files

DELIVERIES = "deliveries"
BATCH = 100
"""Prompts sent in one Publish request between writing their intents and their outcomes:
the most a cut-off delivery can leave sent and unrecorded (docs/outputs.md)."""

Key = tuple[str, str]
"""A prompt's request id and prompt hash."""


@dataclass
class DeliveryReport:
    """What one delivery of a run's outbox did."""

    topic: str
    delivered: int = 0
    duplicates: int = 0
    resent: int = 0
    """Delivered prompts an earlier attempt meant to send and recorded no outcome of."""
    refused: int = 0
    refusals: dict[str, int] = field(default_factory=dict)
    """Each refusal's reason -> how many prompts it refused."""
    letters: str | None = None
    """The files of the refused prompts' dead letters (a glob), when any."""

    def lines(self) -> list[str]:
        """The summary's lines about it."""
        lines = [
            f"  delivered        {self.delivered} to {self.topic}",
            f"  duplicates       {self.duplicates} (delivered by an earlier run, not sent again)",
        ]
        if self.resent:
            lines.append(
                f"  sent again       {self.resent} (an earlier delivery was cut off before "
                f"recording them; each carries its first dedup_id)"
            )
        if self.refused:
            lines.append(f"  not delivered    {self.refused} (dead letters: {self.letters})")
        return lines

    def failure(self) -> str | None:
        """Why the run must exit 1 (some prompt was not delivered), or None."""
        if not self.refused:
            return None
        reason = max(self.refusals, key=lambda r: self.refusals[r])
        return (
            f"{self.refused} prompts were not delivered to --prompts_topic {self.topic} "
            f"(e.g. {reason}); the run is committed, each is a publish dead letter in "
            f"{self.letters}; fix the topic and run again with --overwrite: the "
            f"{self.delivered + self.duplicates} delivered are not sent again"
        )


@dataclass
class Recorded:
    """What `deliveries/` under an output says of each prompt."""

    delivered: dict[Key, str] = field(default_factory=dict)
    """-> the run that delivered it."""
    intended: dict[Key, str] = field(default_factory=dict)
    """-> the `dedup_id` of the first intent to send it (delivered or not)."""


def recorded(output: str) -> Recorded:
    """Every delivery, duplicate and intent recorded under `output`'s `deliveries/`."""
    found = Recorded()
    for name in ("deliveries", "intents"):
        pattern = f"{output}/{DELIVERIES}/{name}-*.jsonl"
        if not matching_files(pattern):
            continue
        for _, line in file_records(pattern, "jsonl"):
            if isinstance(line, bytes):
                row = Delivery.model_validate_json(line)
                key = (row.request_id, row.prompt_sha256)
                if row.outcome == "intended" and row.dedup_id is not None:
                    found.intended.setdefault(key, row.dedup_id)
                elif row.outcome != "intended":
                    found.delivered.setdefault(key, row.delivered_by)
    return found


def delivered_before(output: str) -> dict[Key, str]:
    """(request id, prompt hash) -> the run that delivered it, from `output`'s deliveries."""
    return recorded(output).delivered


def _queued(output: str) -> Iterator[QueuedPrompt]:
    pattern = f"{output_prefix(output, 'outbox')}-*.jsonl"
    if matching_files(pattern):
        for _, line in file_records(pattern, "jsonl"):
            if isinstance(line, bytes):
                yield QueuedPrompt.model_validate_json(line)


def prompt_line(prompt: QueuedPrompt) -> PromptLine:
    """The staged prompt as the line its message is made of."""
    return PromptLine(
        prompt.request_id,
        prompt.tenant_id,
        prompt.builder_version,
        prompt.line,
        tuple(tuple(group) for group in prompt.conflicts),
        tuple(prompt.uncovered_facets),
        prompt.prompt_sha256,
    )


def _write(path: str, rows: list[Delivery] | list[DeadLetter]) -> None:
    """`rows` as a whole file: it exists (on Cloud Storage) only once closed."""
    with FileSystems.create(path) as handle:
        handle.write(b"".join(r.model_dump_json().encode("utf-8") + b"\n" for r in rows))


@dataclass
class _Attempt:
    """One delivery of an outbox: where it records, what it found, what it did."""

    output: str
    run_id: str
    publisher: Publisher
    bound: Step
    earlier: Recorded
    report: DeliveryReport
    name: str = field(default_factory=new_run_id)

    def record(self, kind: str, number: int, rows: list[Delivery] | list[DeadLetter]) -> None:
        if rows:
            path = f"{self.output}/{DELIVERIES}/{kind}-{self.run_id}-{self.name}-{number:05d}.jsonl"
            self.bound(partial(_write, path, rows), f"recording {path}")

    def send(self, number: int, batch: list[QueuedPrompt]) -> None:
        """Record the intents of `batch`'s new prompts, publish them, record the outcomes."""
        topic, run_id = self.report.topic, self.run_id
        done: list[Delivery] = []
        intents: list[Delivery] = []
        for prompt in batch:
            key = (prompt.request_id, prompt.prompt_sha256)
            if (by := self.earlier.delivered.get(key)) is not None:
                self.report.duplicates += 1
                done.append(_delivery(prompt, run_id, topic, "duplicate", by))
                continue
            dedup = self.earlier.intended.get(key) or dedup_id(run_id, prompt.request_id)
            intents.append(_delivery(prompt, run_id, topic, "intended", run_id, dedup))
        self.record("intents", number, intents)
        letters: list[DeadLetter] = []
        messages = [
            prompt_message(prompt_line(p), run_id, i.dedup_id)
            for p, i in zip(_fresh(batch, intents), intents, strict=True)
        ]
        for intent, message, outcome in zip(
            intents, messages, self.publisher.publish(messages), strict=True
        ):
            if isinstance(outcome, Refusal):
                self.report.refused += 1
                refusals = self.report.refusals
                refusals[outcome.reason] = refusals.get(outcome.reason, 0) + 1
                letters.append(unpublished(message, outcome.reason, topic))
                continue
            key = (intent.request_id, intent.prompt_sha256)
            self.report.delivered += 1
            self.report.resent += key in self.earlier.intended
            self.earlier.delivered[key] = run_id
            done.append(intent.model_copy(update={"outcome": "delivered", "message_id": outcome}))
        self.record("deliveries", number, done)
        self.record("dead_letters", number, letters)


def _fresh(batch: list[QueuedPrompt], intents: list[Delivery]) -> list[QueuedPrompt]:
    """The prompts of `batch` that `intents` are of, in order."""
    wanted = {(i.request_id, i.prompt_sha256) for i in intents}
    return [p for p in batch if (p.request_id, p.prompt_sha256) in wanted]


def deliver_outbox(
    output: str, topic: str, run_id: str, timeout_seconds: float, bound: Step = unbounded
) -> DeliveryReport:
    """Publish the committed outbox of the run under `output` to `topic`, each prompt once
    across runs as far as the queue allows; every call to `output` within `bound`; see
    the module docstring."""
    report = DeliveryReport(topic)
    earlier = bound(partial(recorded, output), f"reading {output}/{DELIVERIES}/")
    publisher = Publisher(topic, timeout_seconds)
    attempt = _Attempt(output, run_id, publisher, bound, earlier, report)
    queued = _queued(output)
    for number in count():
        batch = bound(lambda: list(islice(queued, BATCH)), "reading the outbox")
        if not batch:
            break
        attempt.send(number, batch)
    publisher.close()
    if report.refused:
        report.letters = f"{output}/{DELIVERIES}/dead_letters-{run_id}-{attempt.name}-*.jsonl"
    return report


def _delivery(
    prompt: QueuedPrompt,
    run_id: str,
    topic: str,
    outcome: str,
    by: str,
    dedup: str | None = None,
) -> Delivery:
    return Delivery(
        request_id=prompt.request_id,
        prompt_sha256=prompt.prompt_sha256,
        run_id=run_id,
        topic=topic,
        outcome=outcome,
        message_id=None,
        delivered_by=by,
        dedup_id=dedup,
    )
