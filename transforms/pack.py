"""Pack requests with the core packer, one DoFn per worker thread.

The tokenizer is loaded once in `setup()`; the catalog comes from the side
input and is rebuilt only when it changes. A request the packer refuses
(`PackError`, e.g. a question too long for the model) is a permanent error:
it becomes a dead letter, never a retried bundle.

Each prompt is also written as one line of the configured prompt format
(`packer.formats`), with the reserved answer from its manifest as the
provider's `max_tokens`. A line longer than its format's per-line headroom
could push a sharded file past the provider's limit: that request is
dead-lettered at stage `format` and writes nothing else.
"""

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.metrics import Metrics
from apache_beam.typehints.decorators import no_annotations
from apache_beam.utils.timestamp import MIN_TIMESTAMP, Timestamp

from packer import Catalog, TokenCounter, pack_request
from packer.formats import FILE_LIMITS, PromptLine, format_line
from packer.pack import PackError, PackResult
from schemas import (
    DeadLetter,
    ExclusionReason,
    ExclusionRecord,
    ManifestRow,
    PackingConfig,
    PromptMessage,
    Request,
)
from transforms.catalog_io import CatalogCache, CatalogSnapshot
from transforms.dead_letters import dead_letter
from transforms.names import DEAD_LETTERS, METRICS_NAMESPACE

MANIFESTS = "manifests"
EXCLUSIONS = "exclusions"
PROMPTS = "prompts"
LINES = "prompt_lines"
PROGRESS_SECONDS = 30.0

_LOG = logging.getLogger(__name__)


class PackDoFn(beam.DoFn):
    """Request -> prompt (main output), manifest, exclusion rows; dead letter on PackError."""

    def __init__(self, config: PackingConfig, event_time: datetime | None) -> None:
        self._config = config
        self._event_time = event_time
        self._requests = Metrics.counter(METRICS_NAMESPACE, "requests_packed")
        self._candidates = Metrics.counter(METRICS_NAMESPACE, "candidates_in")
        self._evidence = Metrics.counter(METRICS_NAMESPACE, "evidence_packed")
        self._excluded = {
            reason: Metrics.counter(METRICS_NAMESPACE, f"excluded_{reason.value}")
            for reason in ExclusionReason
        }
        self._prompt_tokens = Metrics.distribution(METRICS_NAMESPACE, "prompt_tokens")
        self._load_ms = Metrics.distribution(METRICS_NAMESPACE, "tokenizer_load_ms")

    def setup(self) -> None:
        started = time.monotonic()
        self._tokens = TokenCounter.load(self._config.tokenizer, self._config.tokenizer_file)
        self._load_ms.update(int((time.monotonic() - started) * 1000))
        self._catalogs = CatalogCache()
        self._done = 0
        self._since = time.monotonic()
        self._last_log = self._since

    def process(
        self,
        request: Request,
        catalog: CatalogSnapshot,
        timestamp: Timestamp = beam.DoFn.TimestampParam,
    ) -> Iterator[Any]:
        table = self._catalogs.get(catalog)
        yield from self.pack(request, table, self._catalogs.version(request), timestamp)

    def pack(
        self, request: Request, catalog: Catalog, catalog_version: str, timestamp: Timestamp
    ) -> Iterator[Any]:
        """Pack one request against `catalog`; the outputs every catalog mode shares."""
        try:
            result = pack_request(
                request,
                catalog,
                self._config,
                self._tokens,
                event_time=self._event_time or _element_time(timestamp),
                catalog_version=catalog_version,
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
        line = self._line(result)
        if isinstance(line, DeadLetter):
            yield pvalue.TaggedOutput(DEAD_LETTERS, line)
            return
        self._requests.inc()
        self._candidates.inc(len(request.candidates))
        self._evidence.inc(len(result.manifest.evidence))
        for record in result.exclusions:
            self._excluded[record.reason].inc()
        self._prompt_tokens.update(result.prompt.prompt_tokens)
        self._progress()
        yield result.prompt
        yield pvalue.TaggedOutput(LINES, line)
        yield pvalue.TaggedOutput(MANIFESTS, result.manifest)
        for record in result.exclusions:
            yield pvalue.TaggedOutput(EXCLUSIONS, record)

    def _line(self, result: PackResult) -> PromptLine | DeadLetter:
        """The prompt in the configured format, or a dead letter when it is too long."""
        fmt = self._config.prompt_format
        prompt = result.prompt
        text = format_line(prompt, result.manifest.budget.reserved_answer, fmt)
        headroom = FILE_LIMITS[fmt].line_headroom
        if headroom and len(text.encode("utf-8")) > headroom:
            return dead_letter(
                "format",
                f"{fmt} line of {len(text.encode('utf-8'))} bytes exceeds the "
                f"{headroom}-byte line headroom of a sharded file",
                prompt.model_dump_json(),
                "",
                prompt.request_id,
            )
        manifest = result.manifest
        return PromptLine(
            prompt.request_id,
            prompt.tenant_id,
            prompt.builder_version,
            text,
            tuple(tuple(c.labels) for c in manifest.conflicts if len(c.labels) >= 2),
            tuple(manifest.uncovered_facets),
        )

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
class PackOutputs:
    """The outputs of packing: prompts (as messages and as formatted lines) and audit rows."""

    prompts: beam.PCollection[PromptMessage]
    lines: beam.PCollection[PromptLine]
    manifests: beam.PCollection[ManifestRow]
    exclusions: beam.PCollection[ExclusionRecord]
    dead_letters: beam.PCollection[DeadLetter]


class PackRequests(beam.PTransform[beam.PCollection[Request], "PackOutputs"]):
    """Requests + catalog snapshot side input -> prompts, manifests, exclusions, dead letters.

    `event_time` stands in for requests without their own event_time/as_of: the
    batch run's start. When it is None (streaming), the element's timestamp
    (e.g. the Pub/Sub publish time) is used.
    """

    def __init__(
        self,
        config: PackingConfig,
        catalog: beam.PCollection[CatalogSnapshot],
        event_time: datetime | None = None,
    ) -> None:
        super().__init__()
        self._config = config
        self._catalog = catalog
        self._event_time = event_time

    @no_annotations  # the result is a PackOutputs, not a PCollection
    def expand(self, requests: beam.PCollection[Request]) -> PackOutputs:
        fn = PackDoFn(self._config, self._event_time)
        return pack_with(requests, fn, beam.pvalue.AsSingleton(self._catalog))


def pack_with(requests: beam.PCollection[Request], fn: PackDoFn, *side_inputs: Any) -> PackOutputs:
    """Apply a pack DoFn and name its outputs (shared by batch and streaming)."""
    outputs = requests | "Pack" >> beam.ParDo(fn, *side_inputs).with_outputs(
        LINES, MANIFESTS, EXCLUSIONS, DEAD_LETTERS, main=PROMPTS
    )
    return PackOutputs(
        prompts=outputs[PROMPTS],
        lines=outputs[LINES],
        manifests=outputs[MANIFESTS],
        exclusions=outputs[EXCLUSIONS],
        dead_letters=outputs[DEAD_LETTERS],
    )
