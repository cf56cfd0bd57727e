"""Pack against the Bigtable catalog: keyed lookups with a bounded, expiring cache.

Each request asks Bigtable for its own catalog entries, one `read_rows` call
for all its keys, through a per-worker-thread LRU cache of at most
`cache_entries` entries. An entry lives `cache_seconds`, the revocation delay:
a revoked grant, a deletion or a new revision written by `evpack catalog load`
applies to every request packed that long after the write, the same bound the
re-read file catalog gives. Absent rows are cached too (as absent), so a new
document appears within the same delay. Memory and time follow the requests,
not the catalog.

Fail closed:
- a lookup that fails is retried, then raises, so the runner retries the
  bundle; it is never read as "no document";
- a row that exists but does not hold a valid entry for its key sends the
  request to the dead letters (stage `catalog`), never packs it without it;
- only a row Bigtable says is absent is an unknown document, excluded by the
  gates as `unknown_document`.

Why not Beam's `Enrichment` with `BigTableEnrichmentHandler`: it enriches one
element with one row (`read_row` per element), so a request of ten documents
would be split into ten elements and regrouped, a stateful step in streaming;
its cache is Redis (`with_redis_cache`), not a bounded in-process one with the
revocation delay as TTL; and a row it does not find is returned as an empty
enrichment, which would need care to keep apart from a failed read. One batched
read per request in the pack step is simpler and closes those gaps.
"""

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import apache_beam as beam
from apache_beam.metrics import Metrics
from pydantic import ValidationError

from packer import Catalog
from packer.catalog_slice import CatalogKey, request_keys, slice_version
from packer.parsing.dead_letters import dead_letter
from packer.parsing.names import METRICS_NAMESPACE
from schemas import CatalogDocument, DeadLetter, Request
from transforms.catalog.base import Attached, CatalogView
from transforms.catalog.bigtable_table import TableAddress, open_table, read_entries

Entry = bytes | None
"""A stored catalog line, or None for a document the table does not hold."""


@dataclass(frozen=True)
class CachedLookup:
    """Which table to ask, and how long and how many entries a worker thread keeps."""

    address: TableAddress
    ttl_seconds: float
    max_entries: int


class TtlCache:
    """At most `capacity` entries, each forgotten `ttl` seconds after it was fetched."""

    def __init__(
        self, capacity: int, ttl: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._capacity = capacity
        self._ttl = ttl
        self._clock = clock
        self._entries: OrderedDict[CatalogKey, tuple[float, Entry]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get_many(
        self, keys: Sequence[CatalogKey], fetch: Callable[[Sequence[CatalogKey]], dict]
    ) -> dict[CatalogKey, Entry]:
        """The entries of `keys`, fetching the missing or expired ones in one call."""
        now = self._clock()
        entries = self._entries
        found: dict[CatalogKey, Entry] = {}
        missing = []
        for key in keys:
            cached = entries.get(key)
            if cached is not None and cached[0] > now:
                entries.move_to_end(key)
                found[key] = cached[1]
            else:
                missing.append(key)
        if missing:
            fetched = fetch(missing)
            for key in missing:
                found[key] = fetched[key]
                entries[key] = (now + self._ttl, fetched[key])
                entries.move_to_end(key)
            while len(entries) > self._capacity:
                entries.popitem(last=False)
        return found


class UnreadableEntry(ValueError):
    """A catalog row that exists but holds no valid entry for its key."""


def documents_of(entries: dict[CatalogKey, Entry]) -> tuple[list[CatalogDocument], list[bytes]]:
    """The documents of the present entries and their lines; raises on an unreadable one."""
    docs, lines = [], []
    for key, line in entries.items():
        if line is None:
            continue
        try:
            doc = CatalogDocument.model_validate_json(line)
        except ValidationError as err:
            raise UnreadableEntry(f"catalog entry {key} is unreadable: {err}") from err
        if (doc.tenant_id, doc.document_id) != key:
            raise UnreadableEntry(f"catalog row {key} holds document {doc.document_id}")
        docs.append(doc)
        lines.append(line)
    return docs, lines


class BigtableReader:
    """Looks up each request's entries in Bigtable, through this worker's TTL cache."""

    def __init__(self, lookup: CachedLookup) -> None:
        self._table = open_table(lookup.address)
        self._cache = TtlCache(lookup.max_entries, lookup.ttl_seconds)
        self._lookups = Metrics.counter(METRICS_NAMESPACE, "catalog_lookups")

    def _fetch(self, keys: Sequence[CatalogKey]) -> dict[CatalogKey, Entry]:
        self._lookups.inc()
        return read_entries(self._table, keys)

    def view(self, request: Request) -> CatalogView | DeadLetter:
        entries = self._cache.get_many(request_keys(request), self._fetch)
        try:
            docs, lines = documents_of(entries)
        except UnreadableEntry as err:
            payload = request.model_dump_json()
            return dead_letter("catalog", str(err), payload, "", request.request_id)
        return CatalogView(request, Catalog(docs), slice_version(lines))


class BigtableCatalog:
    """The catalog in a Bigtable table, looked up per request (`--catalog_mode=bigtable`)."""

    def __init__(self, lookup: CachedLookup) -> None:
        self._open = partial(BigtableReader, lookup)

    def attach(self, requests: beam.PCollection[Request]) -> Attached:
        return Attached(requests, (), self._open)
