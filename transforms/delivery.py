"""A batch run's prompts to `--prompts_topic`, published only once the run is committed.

Every check that can refuse a batch run (the dead-letter gate, a run that
made no prompt, the commit itself) is made before the first publish: the
pipeline stages its prompts in the run's staging folder as `outbox/` files
(`QueuedPrompt` rows), committed with the other outputs, and this step,
run after the commit, publishes them (`transforms.io.publish`: bounded
retries, an outcome per message). What it did is written beside the run's
outputs under `<output>/deliveries/`, one pair of files per attempt:

- `deliveries-<run>-<attempt>.jsonl`: a `Delivery` row per prompt delivered
  (with its message id) or found delivered already;
- `dead_letters-<run>-<attempt>.jsonl`: a `publish` dead letter per prompt the
  topic refused, the message kept whole (`unpublished`), so it can be sent
  again.

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
from contextlib import ExitStack
from dataclasses import dataclass, field
from itertools import islice
from typing import IO

from apache_beam.io.filesystems import FileSystems

from schemas import DeadLetter
from schemas.outputs import Delivery, QueuedPrompt
from schemas.prompt_formats import PromptLine
from schemas.run import new_run_id
from transforms.io.publish import REQUEST_MESSAGES, Publisher, Refusal, unpublished
from transforms.io.pubsub import prompt_message
from transforms.io.row_files import output_prefix
from transforms.record_files import file_records, matching_files

DELIVERIES = "deliveries"


@dataclass
class DeliveryReport:
    """What one delivery of a run's outbox did."""

    topic: str
    delivered: int = 0
    duplicates: int = 0
    refused: int = 0
    refusals: dict[str, int] = field(default_factory=dict)
    """Each refusal's reason -> how many prompts it refused."""
    letters: str | None = None
    """The file of the refused prompts' dead letters, when any."""

    def lines(self) -> list[str]:
        """The summary's lines about it."""
        lines = [
            f"  delivered        {self.delivered} to {self.topic}",
            f"  duplicates       {self.duplicates} (delivered by an earlier run, not sent again)",
        ]
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


def delivered_before(output: str) -> dict[tuple[str, str], str]:
    """(request id, prompt hash) -> the run that delivered it, from `output`'s deliveries."""
    found: dict[tuple[str, str], str] = {}
    pattern = f"{output_prefix(output, DELIVERIES)}-*.jsonl"
    if not matching_files(pattern):
        return found
    for _, line in file_records(pattern, "jsonl"):
        if isinstance(line, bytes):
            row = Delivery.model_validate_json(line)
            found.setdefault((row.request_id, row.prompt_sha256), row.delivered_by)
    return found


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


class _Record:
    """The attempt's two files, each opened at its first line."""

    def __init__(self, output: str, run_id: str, stack: ExitStack) -> None:
        attempt = f"{run_id}-{new_run_id()}"
        self.paths = {
            "deliveries": f"{output_prefix(output, DELIVERIES)}-{attempt}.jsonl",
            "dead_letters": f"{output}/{DELIVERIES}/dead_letters-{attempt}.jsonl",
        }
        self._stack = stack
        self._open: dict[str, IO[bytes]] = {}

    def write(self, name: str, row: Delivery | DeadLetter) -> None:
        if name not in self._open:
            self._open[name] = self._stack.enter_context(FileSystems.create(self.paths[name]))
        self._open[name].write(row.model_dump_json().encode("utf-8") + b"\n")


def deliver_outbox(output: str, topic: str, run_id: str, timeout_seconds: float) -> DeliveryReport:
    """Publish the committed outbox of the run under `output` to `topic`, each prompt once
    across runs; see the module docstring."""
    report = DeliveryReport(topic)
    earlier = delivered_before(output)
    publisher = Publisher(topic, timeout_seconds)
    queued = _queued(output)
    with ExitStack() as stack:
        record = _Record(output, run_id, stack)
        while chunk := list(islice(queued, REQUEST_MESSAGES)):
            fresh = []
            for prompt in chunk:
                by = earlier.get((prompt.request_id, prompt.prompt_sha256))
                if by is None:
                    fresh.append(prompt)
                    continue
                report.duplicates += 1
                record.write("deliveries", _delivery(prompt, run_id, topic, None, by))
            messages = [prompt_message(prompt_line(p), run_id) for p in fresh]
            for prompt, message, outcome in zip(
                fresh, messages, publisher.publish(messages), strict=True
            ):
                if isinstance(outcome, Refusal):
                    report.refused += 1
                    report.refusals[outcome.reason] = report.refusals.get(outcome.reason, 0) + 1
                    record.write("dead_letters", unpublished(message, outcome.reason, topic))
                    continue
                report.delivered += 1
                earlier[(prompt.request_id, prompt.prompt_sha256)] = run_id
                record.write("deliveries", _delivery(prompt, run_id, topic, outcome, run_id))
    publisher.close()
    report.letters = record.paths["dead_letters"] if report.refused else None
    return report


def _delivery(
    prompt: QueuedPrompt, run_id: str, topic: str, message_id: str | None, by: str
) -> Delivery:
    return Delivery(
        request_id=prompt.request_id,
        prompt_sha256=prompt.prompt_sha256,
        run_id=run_id,
        topic=topic,
        outcome="delivered" if message_id is not None else "duplicate",
        message_id=message_id,
        delivered_by=by,
    )
