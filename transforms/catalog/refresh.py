"""The document catalog, re-read while a streaming job runs.

A revoked grant, a deletion or a new revision must take effect without a
restart. Each packing worker keeps the last snapshot of the catalog file(s)
and re-reads them when it is older than the refresh interval (checked as
requests arrive); `SharedCatalogs` rebuilds the lookup only when the content
fingerprint changes. So a change applies to every request packed more than
one interval after it lands, on any runner.

Why not a slowly updating side input fed by `PeriodicImpulse`: on Beam 2.77's
in-process `BundleBasedDirectRunner` that transform fails to expand ("GroupByKey
was not replaced as expected"), and a looping processing-time timer feeding a
global-window side input handed the first requests an empty side input. The
worker-side refresh behaves the same locally and on Dataflow, and is bounded
by the interval either way.

A refresh that cannot read or parse the catalog (e.g. a file caught mid-copy)
keeps the last good snapshot; the failure is logged and counted. The first
load has no fallback and fails loudly, and the job checks it before starting.
"""

import logging
import threading
import time
from collections.abc import Callable
from functools import partial

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.utils.shared import Shared

from packer.parsing.names import METRICS_NAMESPACE, FileFormat
from schemas import Request
from transforms.catalog.base import Attached, CatalogView
from transforms.catalog.side_input import (
    CatalogSnapshot,
    SnapshotReader,
    catalog_documents,
    snapshot,
)

_LOG = logging.getLogger(__name__)


def load_snapshot(pattern: str, file_format: FileFormat) -> CatalogSnapshot:
    """The catalog as it is now in the file(s) matching `pattern`, local or gs://."""
    return snapshot(catalog_documents(pattern, file_format))


class RefreshingCatalog:
    """The latest catalog snapshot, re-read at most every `interval_seconds`."""

    def __init__(
        self,
        pattern: str,
        file_format: FileFormat,
        interval_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._pattern = pattern
        self._format = file_format
        self._interval = interval_seconds
        self._clock = clock
        self._snapshot: CatalogSnapshot | None = None
        self._loaded_at = 0.0
        self._lock = threading.Lock()

    def current(self) -> tuple[CatalogSnapshot, bool]:
        """The snapshot, re-read first when older than the interval; and whether a
        re-read failed on this call (the last good snapshot is kept).

        Safe to share between threads: one re-reads while the others wait for it.
        """
        with self._lock:
            now = self._clock()
            if self._snapshot is not None and now - self._loaded_at < self._interval:
                return self._snapshot, False
            failed = False
            try:
                self._snapshot = load_snapshot(self._pattern, self._format)
            except (OSError, ValueError) as err:
                if self._snapshot is None:
                    raise
                failed = True
                _LOG.error("catalog refresh failed, keeping the last snapshot: %s", err)
            self._loaded_at = now
            return self._snapshot, failed


class RefreshingReader:
    """Reads the catalog from the worker's re-read snapshot; counts failed refreshes.

    The refreshing source and the loaded catalog are both per worker process
    (Beam's `Shared`): a worker re-reads the file once per interval and holds
    one parsed catalog, whatever its number of DoFn threads.
    """

    def __init__(
        self,
        pattern: str,
        file_format: FileFormat,
        interval: float,
        sources: Shared,
        catalogs: Shared,
    ) -> None:
        self._source: RefreshingCatalog = sources.acquire(
            lambda: RefreshingCatalog(pattern, file_format, interval)
        )
        self._snapshots = SnapshotReader(catalogs)
        self._failures = Metrics.counter(METRICS_NAMESPACE, "catalog_refresh_failures")

    def view(self, request: Request) -> CatalogView:
        snapshot, failed = self._source.current()
        if failed:
            self._failures.inc()
        return self._snapshots.view(request, snapshot)


class RefreshingCatalogFile:
    """The catalog file(s), re-read by each worker every `interval` seconds (streaming).

    Requests without their own event_time/as_of are packed at their element
    timestamp (the Pub/Sub event-time attribute or publish time).
    """

    def __init__(self, pattern: str, file_format: FileFormat, interval: float) -> None:
        self._open = partial(RefreshingReader, pattern, file_format, interval, Shared(), Shared())

    def attach(self, requests: beam.PCollection[Request]) -> Attached:
        return Attached(requests, (), self._open)
