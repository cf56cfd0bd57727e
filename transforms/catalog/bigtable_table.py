"""The catalog as a Bigtable table: one row per document, the whole entry in one cell.

Row key: the JSON array `["<tenant_id>","<document_id>"]`, unambiguous for any
ids and prefixed by the tenant, so a tenant's documents sit together. Family
`c`, column `doc`: the document's canonical JSON line. One cell holds the whole
entry, and Bigtable writes a row atomically, so a reader sees an entry before
or after a change, never half of one. The family keeps one version.

`load_catalog` makes the table hold exactly a catalog file: every document of
the file is written, and a row whose document is no longer in the file is
rewritten with `deleted: true`. A document that vanishes from the export is
therefore excluded as deleted, never silently kept with its last grants.
Loading the same file twice gives the same table.

Clients find the emulator through `BIGTABLE_EMULATOR_HOST`. The Bigtable client
is imported on first use (about 0.6 s): a job whose catalog is a file, and every
`--help`, start without it.
"""

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from google.api_core import exceptions as api_exceptions

from packer.catalog_slice import CatalogKey, canonical_line
from schemas import CatalogDocument

if TYPE_CHECKING:
    from google.cloud.bigtable.table import Table

FAMILY = "c"
COLUMN = b"doc"
MUTATION_BATCH = 2_000
LOOKUP_ATTEMPTS = 5

TRANSIENT_ERRORS: tuple[type[Exception], ...] = (
    api_exceptions.ServiceUnavailable,
    api_exceptions.DeadlineExceeded,
    api_exceptions.InternalServerError,
    api_exceptions.Aborted,
    api_exceptions.TooManyRequests,
    api_exceptions.ResourceExhausted,
    ConnectionError,
    TimeoutError,
)


@dataclass(frozen=True)
class TableAddress:
    """Which Bigtable table holds the catalog."""

    project: str
    instance: str
    table: str


def row_key(key: CatalogKey) -> bytes:
    """The row key of a (tenant_id, document_id)."""
    return json.dumps(list(key), ensure_ascii=False, separators=(",", ":")).encode()


def key_of_row(row: bytes) -> CatalogKey:
    tenant, document = json.loads(row)
    return tenant, document


def open_table(address: TableAddress, *, admin: bool = False) -> "Table":
    """The table through a client of real Bigtable, or of the emulator when its host is set."""
    from google.cloud import bigtable

    client = bigtable.Client(project=address.project, admin=admin)
    return client.instance(address.instance).table(address.table)


def create_table(address: TableAddress) -> "Table":
    """Create the table with its one column family, if missing (idempotent)."""
    table = open_table(address, admin=True)
    if not table.exists():
        from google.cloud.bigtable.column_family import MaxVersionsGCRule

        table.create(column_families={FAMILY: MaxVersionsGCRule(1)})
    return table


class CatalogLookupError(RuntimeError):
    """Bigtable did not answer a lookup; never to be read as "no such document"."""


def read_entries(
    table: "Table", keys: Sequence[CatalogKey], attempts: int = LOOKUP_ATTEMPTS
) -> dict[CatalogKey, bytes | None]:
    """The stored line of each key, None for a key with no row (an unknown document).

    Transient errors are retried with backoff; after `attempts`, or on any other
    error, `CatalogLookupError` is raised, so the runner retries the bundle.
    """
    from google.cloud.bigtable.row_filters import CellsColumnLimitFilter
    from google.cloud.bigtable.row_set import RowSet

    rows = RowSet()
    for key in keys:
        rows.add_row_key(row_key(key))
    for attempt in range(1, attempts + 1):
        try:
            found = {
                key_of_row(row.row_key): row.cells[FAMILY][COLUMN][0].value
                for row in table.read_rows(row_set=rows, filter_=CellsColumnLimitFilter(1))
                if COLUMN in row.cells.get(FAMILY, {})
            }
            return {key: found.get(key) for key in keys}
        except TRANSIENT_ERRORS as err:
            if attempt == attempts:
                raise CatalogLookupError(f"catalog lookup failed {attempts} times: {err}") from err
            time.sleep(min(0.2 * 2**attempt, 10.0))
        except api_exceptions.GoogleAPIError as err:
            raise CatalogLookupError(f"catalog lookup failed: {err}") from err
    raise AssertionError("unreachable")


def _write(table: "Table", entries: Iterable[tuple[CatalogKey, bytes]], stamp: datetime) -> int:
    """Write entries in batches; raises unless every mutation succeeded."""
    written = 0
    batch = []
    for key, line in entries:
        row = table.direct_row(row_key(key))
        row.set_cell(FAMILY, COLUMN, line, timestamp=stamp)
        batch.append(row)
        if len(batch) >= MUTATION_BATCH:
            written += _flush(table, batch)
            batch = []
    return written + (_flush(table, batch) if batch else 0)


def _flush(table: "Table", batch: list) -> int:
    statuses = table.mutate_rows(batch)
    failed = [s for s in statuses if s.code != 0]
    if failed:
        raise CatalogLookupError(f"{len(failed)} of {len(batch)} catalog rows not written")
    return len(batch)


@dataclass(frozen=True)
class LoadResult:
    """What a load changed."""

    written: int
    marked_deleted: int


class EmptyExport(ValueError):
    """A load of no document, not declared meant: it would mark every document deleted."""


def load_catalog(
    table: "Table", documents: Iterable[CatalogDocument], allow_empty: bool = False
) -> LoadResult:
    """Make the table hold exactly `documents` (see the module docstring); fails on a repeat.

    No document at all is refused (`EmptyExport`, nothing written or marked) unless
    `allow_empty`: an export cut off or a filter gone wrong is likelier than a catalog
    emptied on purpose, and the load would revoke every document at once.
    """
    now = datetime.now(UTC)
    stamp = now.replace(microsecond=now.microsecond // 1000 * 1000)  # Bigtable keeps ms
    seen: set[bytes] = set()

    def entries() -> Iterator[tuple[CatalogKey, bytes]]:
        for doc in documents:
            key = (doc.tenant_id, doc.document_id)
            rk = row_key(key)
            if rk in seen:
                raise ValueError(f"catalog lists document {key} twice")
            seen.add(rk)
            yield key, canonical_line(doc)

    from google.cloud.bigtable.row_filters import StripValueTransformerFilter

    written = _write(table, entries(), stamp)
    if not seen and not allow_empty:
        raise EmptyExport(
            "the catalog lists no document: loading it would mark every document of the "
            "table deleted; pass --allow_empty if that is meant"
        )
    stale = [
        row.row_key
        for row in table.read_rows(filter_=StripValueTransformerFilter(True))
        if row.row_key not in seen
    ]
    marked = _write(table, _deleted(table, stale), stamp) if stale else 0
    return LoadResult(written=written, marked_deleted=marked)


def _deleted(table: "Table", stale: list[bytes]) -> Iterator[tuple[CatalogKey, bytes]]:
    """The entries of rows gone from the file, as deleted (already deleted ones skipped)."""
    for start in range(0, len(stale), MUTATION_BATCH):
        keys = [key_of_row(r) for r in stale[start : start + MUTATION_BATCH]]
        for key, line in read_entries(table, keys).items():
            if line is None:
                continue
            doc = CatalogDocument.model_validate_json(line)
            if not doc.deleted:
                yield key, canonical_line(doc.model_copy(update={"deleted": True}))
