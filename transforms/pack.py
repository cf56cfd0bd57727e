"""Pack requests with the core packer: one pack step for every catalog provider.

`PackRequests(config, source, event_time)` is the pack step of batch and
streaming alike; only the `CatalogProvider` differs: a side-input snapshot, the
file re-read while a stream runs, Bigtable lookups, or the catalog joined to
the requests by key (`--catalog_mode`). A source attaches what it needs to
the requests (a side input, a join) and opens a `CatalogReader` per DoFn
instance, which gives each element's request with the catalog entries it may
see. Metrics, dead letters, progress logging and the prompt line are the
same whatever the source. Rejected: a DoFn subclass per source overriding
`process` with its own signature (four copies of the same outputs, and
streaming lost the batch counters on the way).

Each worker packs with one `PackerRuntime` (the tokenizer and every memo),
acquired through Beam's `Shared`, as `RunInference` shares its model: the
DoFn threads of a worker load the tokenizer once and count a recurring
passage once.

A worker's setup makes the collector's full collections rare
(`transforms.collector`): they walked the whole long-lived heap of the worker
(Beam, the catalog, the memos) and took a sixth of a batch run. It is the one
process-wide setting the job makes, in its workers' setup, where the job owns
the process.

A request the packer refuses (`PackError`, e.g. a question too long for the
model) is a permanent error: it becomes a dead letter, never a retried
bundle. Each prompt is also made one line of the configured prompt format by
the prompt writer (`transforms.io.prompt_files.prompt_line`), with the reserved
answer from its manifest as the provider's answer limit. A line longer than
its format's per-line headroom could push a sharded file past the provider's
limit: that request is dead-lettered at stage `format` and writes nothing else.
"""

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.metrics import Metrics
from apache_beam.typehints.decorators import no_annotations
from apache_beam.utils.shared import Shared
from apache_beam.utils.timestamp import MIN_TIMESTAMP, Timestamp

from packer import PackerRuntime, pack_request
from packer.pack import PackError
from packer.parsing.dead_letters import dead_letter
from packer.parsing.names import DEAD_LETTERS, METRICS_NAMESPACE
from schemas import (
    DeadLetter,
    ExclusionReason,
    ExclusionRecord,
    ManifestRow,
    PackingConfig,
    PromptMessage,
    Request,
)
from schemas.prompt_formats import PromptLine
from transforms.catalog.base import CatalogProvider, CatalogReader, CatalogView
from transforms.collector import make_full_collections_rare
from transforms.io.prompt_files import prompt_line

PROMPTS = "prompts"
PACKED = "packed"
PROGRESS_SECONDS = 30.0

_LOG = logging.getLogger(__name__)


def load_runtime(config: PackingConfig) -> PackerRuntime:
    """A worker's packer runtime, its tokenizer load time recorded."""
    started = time.monotonic()
    runtime = PackerRuntime.load(config.tokenizer, config.tokenizer_file)
    Metrics.distribution(METRICS_NAMESPACE, "tokenizer_load_ms").update(
        int((time.monotonic() - started) * 1000)
    )
    return runtime


class PackDoFn(beam.DoFn):
    """Element -> prompt (main output) and its `Packed` line and audit rows; or a dead letter."""

    def __init__(
        self,
        config: PackingConfig,
        open_reader: Callable[[], CatalogReader],
        event_time: datetime | None,
    ) -> None:
        self._config = config
        self._open_reader = open_reader
        self._event_time = event_time
        self._runtimes = Shared()
        self._requests = Metrics.counter(METRICS_NAMESPACE, "requests_packed")
        self._candidates = Metrics.counter(METRICS_NAMESPACE, "candidates_in")
        self._evidence = Metrics.counter(METRICS_NAMESPACE, "evidence_packed")
        self._no_evidence = Metrics.counter(METRICS_NAMESPACE, "prompts_without_evidence")
        self._untagged = Metrics.counter(METRICS_NAMESPACE, "facets_untagged")
        self._folded = Metrics.counter(METRICS_NAMESPACE, "evidence_folded")
        self._excluded = {
            reason: Metrics.counter(METRICS_NAMESPACE, f"excluded_{reason.value}")
            for reason in ExclusionReason
        }
        self._prompt_tokens = Metrics.distribution(METRICS_NAMESPACE, "prompt_tokens")

    def setup(self) -> None:
        make_full_collections_rare()
        config = self._config
        self._runtime: PackerRuntime = self._runtimes.acquire(
            lambda: load_runtime(config), tag=f"{config.tokenizer}:{config.tokenizer_file}"
        )
        self._reader = self._open_reader()
        self._done = 0
        self._since = time.monotonic()
        self._last_log = self._since

    # The timestamp comes before the side inputs: Beam fills a defaulted
    # parameter with its DoFn param and passes side inputs positionally after it.
    # Its type checker would take that parameter for the first side input, so
    # it reads no hints from this signature.
    @no_annotations
    def process(
        self,
        element: Any,
        timestamp: Timestamp = beam.DoFn.TimestampParam,
        *side_inputs: Any,
    ) -> Iterator[Any]:
        view = self._reader.view(element, *side_inputs)
        if isinstance(view, DeadLetter):
            yield pvalue.TaggedOutput(DEAD_LETTERS, view)
            return
        yield from self._pack(view, timestamp)

    def _pack(self, view: CatalogView, timestamp: Timestamp) -> Iterator[Any]:
        request = view.request
        try:
            result = pack_request(
                request,
                view.catalog,
                self._config,
                self._runtime,
                event_time=self._event_time or _element_time(timestamp),
                catalog_version=view.version,
            )
        except PackError as err:
            error = f"packer refused the request: {err}"
            yield pvalue.TaggedOutput(DEAD_LETTERS, _pack_letter(request, error))
            return
        except Exception as err:  # a packer bug must cost this request, not crash-loop a stream
            _LOG.exception("packing request %r failed", request.request_id)
            error = f"packer failed on the request: {type(err).__name__}: {err}"
            yield pvalue.TaggedOutput(DEAD_LETTERS, _pack_letter(request, error))
            return
        line = prompt_line(
            self._config.format, result.prompt, result.manifest, self._config.reasoning_headroom
        )
        if isinstance(line, DeadLetter):
            yield pvalue.TaggedOutput(DEAD_LETTERS, line)
            return
        self._requests.inc()
        self._candidates.inc(len(request.candidates))
        self._evidence.inc(len(result.manifest.evidence))
        if not result.manifest.evidence:
            self._no_evidence.inc()
        if result.manifest.facets_untagged:
            self._untagged.inc()
        self._folded.inc(sum(len(block.derived_from) for block in result.manifest.evidence))
        for record in result.exclusions:
            self._excluded[record.reason].inc()
        self._prompt_tokens.update(result.prompt.prompt_tokens)
        self._progress()
        yield result.prompt
        yield pvalue.TaggedOutput(PACKED, Packed(line, result.manifest, tuple(result.exclusions)))

    def _progress(self) -> None:
        """Log this worker's rate now and then, so a long run shows it is alive."""
        self._done += 1
        now = time.monotonic()
        if now - self._last_log >= PROGRESS_SECONDS:
            self._last_log = now
            rate = self._done / max(now - self._since, 1e-9)
            _LOG.info("packed %d requests on this worker (%.1f requests/s)", self._done, rate)


def _element_time(timestamp: Timestamp) -> datetime | None:
    """The element's timestamp as event time, unless it is the unset minimum (file reads)."""
    if timestamp <= MIN_TIMESTAMP:
        return None
    return timestamp.to_utc_datetime(has_tz=True)


def _pack_letter(request: Request, error: str) -> DeadLetter:
    """The dead letter of a request the packer refused or failed on; its payload is the request."""
    return dead_letter("pack", error, request.model_dump_json(), "", request.request_id)


@dataclass(frozen=True)
class Packed:
    """One request's prompt line with the audit rows that record it.

    They travel together to the prompt's sink, so where prompts are published
    a manifest and exclusions are written only for a prompt the queue took
    (`transforms.job_outputs`). Rejected: joining the delivered request ids
    back to the manifests (a streaming join needs windows or state for what is
    one element already).
    """

    line: PromptLine
    manifest: ManifestRow
    exclusions: tuple[ExclusionRecord, ...]

    @property
    def request_id(self) -> str:
        return self.line.request_id


@dataclass(frozen=True)
class PackOutputs:
    """The outputs of packing: prompts (as messages, and as formatted lines with their audit
    rows, `packed`), the same lines and rows apart, and dead letters."""

    prompts: beam.PCollection[PromptMessage]
    packed: beam.PCollection[Packed]
    lines: beam.PCollection[PromptLine]
    manifests: beam.PCollection[ManifestRow]
    exclusions: beam.PCollection[ExclusionRecord]
    dead_letters: beam.PCollection[DeadLetter]


def unpacked(packed: beam.PCollection[Packed]) -> tuple[beam.PCollection, ...]:
    """The lines, manifests and exclusion rows of `packed`, each a collection of its own."""
    return (
        packed | "Lines" >> beam.Map(lambda p: p.line),
        packed | "Manifests" >> beam.Map(lambda p: p.manifest),
        packed | "Exclusions" >> beam.FlatMap(lambda p: p.exclusions),
    )


class PackRequests(beam.PTransform[beam.PCollection[Request], "PackOutputs"]):
    """Requests -> prompts, manifests, exclusions, dead letters, the catalog from `source`.

    `event_time` stands in for requests without their own event_time/as_of: the
    batch run's start. When it is None (streaming), the element's timestamp
    (e.g. the Pub/Sub publish time) is used.
    """

    def __init__(
        self,
        config: PackingConfig,
        source: CatalogProvider,
        event_time: datetime | None = None,
    ) -> None:
        super().__init__()
        self._config = config
        self._source = source
        self._event_time = event_time

    @no_annotations  # the result is a PackOutputs, not a PCollection
    def expand(self, requests: beam.PCollection[Request]) -> PackOutputs:
        attached = self._source.attach(requests)
        fn = PackDoFn(self._config, attached.open_reader, self._event_time)
        outputs = attached.elements | "Pack" >> beam.ParDo(fn, *attached.side_inputs).with_outputs(
            PACKED, DEAD_LETTERS, main=PROMPTS
        )
        lines, manifests, exclusions = unpacked(outputs[PACKED])
        return PackOutputs(
            outputs[PROMPTS], outputs[PACKED], lines, manifests, exclusions, outputs[DEAD_LETTERS]
        )
