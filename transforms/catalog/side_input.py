"""The document catalog as a side input (`--catalog_mode=side_input`), and the catalog files.

The catalog is trusted configuration, so a malformed catalog row fails the job
with its file and error rather than silently hiding documents (which would
exclude their candidates as `unknown_document`).

The side input is one `CatalogSnapshot`: the documents as canonical JSON lines
in one bytes payload, and a fingerprint of it. A side input is size-measured
and copied per bundle; one bytes object costs nothing to measure or copy,
where thousands of document objects cost a traversal and an unpickling each
time. `SharedCatalogs` turns a snapshot into a `packer.Catalog` once per worker
and rebuilds it only when the fingerprint changes (a refreshed catalog).
"""

import hashlib
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial

import apache_beam as beam
from apache_beam.utils.shared import Shared
from pydantic import ValidationError

from packer import Catalog
from packer.catalog_slice import CatalogKey, canonical_line, request_keys, slice_version
from packer.parsing.names import FileFormat
from packer.parsing.strict_json import Refused, Unreadable, decode_text, loads
from schemas import CatalogDocument, Request
from schemas._types import describe_validation_error
from transforms.catalog.base import Attached, CatalogView
from transforms.record_files import ReadRecords, file_records


@dataclass(frozen=True)
class CatalogSnapshot:
    """The whole catalog at one moment, named by the hash of its sorted content."""

    fingerprint: str
    payload: bytes

    def __len__(self) -> int:
        """How many documents, without parsing them (one line each)."""
        return self.payload.count(b"\n")

    @property
    def documents(self) -> tuple[CatalogDocument, ...]:
        """The documents, parsed from the payload (each call parses again)."""
        return tuple(
            CatalogDocument.model_validate_json(line) for line in self.payload.splitlines()
        )


def parse_catalog_row(source: str, payload: bytes | Unreadable) -> CatalogDocument:
    """One catalog document from a record of `transforms.record_files`.

    Raises ValueError naming the file on a bad row. The row passes the checks
    of a request record (`packer.parsing.strict_json`: UTF-8, one leading byte-order
    mark dropped, nesting, number length, no NaN, no key twice) though the
    catalog is trusted: a second `tenant_id` in one row would otherwise win
    silently.
    """
    text = decode_text(payload)
    record = text if isinstance(text, Refused) else loads(text)
    if isinstance(record, Refused):
        raise ValueError(
            f"catalog {source}: bad document row ({record.reason}): {record.text[:200]}"
        )
    try:
        return CatalogDocument.model_validate(record)
    except ValidationError as err:
        raise ValueError(
            f"catalog {source}: bad document row ({describe_validation_error(err)}): {text[:200]}"
        ) from err


def catalog_documents(pattern: str, file_format: FileFormat) -> Iterator[CatalogDocument]:
    """Every document of the file(s) matching `pattern`, local or gs://, read as a stream."""
    for source, payload in file_records(pattern, file_format):
        yield parse_catalog_row(source, payload)


CanonicalRow = tuple[tuple[str, str], bytes]
"""A document's (tenant_id, document_id) and its canonical JSON line."""


def canonical_row(doc: CatalogDocument) -> CanonicalRow:
    """The document as one canonical JSON line (sorted keys), keyed for ordering."""
    return (doc.tenant_id, doc.document_id), canonical_line(doc)


def snapshot_of_rows(rows: Iterable[CanonicalRow]) -> CatalogSnapshot:
    """A snapshot in canonical order; fails on a document listed twice."""
    ordered = sorted(rows)
    for (key, _), (following, _) in itertools.pairwise(ordered):
        if key == following:
            raise ValueError(f"catalog lists document {key} twice")
    payload = b"".join(line for _, line in ordered)
    return CatalogSnapshot(fingerprint=hashlib.sha256(payload).hexdigest()[:16], payload=payload)


def snapshot(documents: Iterable[CatalogDocument]) -> CatalogSnapshot:
    """A snapshot of documents (see `snapshot_of_rows`)."""
    return snapshot_of_rows(canonical_row(doc) for doc in documents)


@dataclass(frozen=True)
class LoadedCatalog:
    """One snapshot as a `packer.Catalog`, with each entry's line (for catalog versions).

    Immutable, so a worker's DoFn threads can share one (`SharedCatalogs`).
    """

    fingerprint: str
    catalog: Catalog
    lines: dict[CatalogKey, bytes]

    @classmethod
    def of(cls, snap: CatalogSnapshot) -> "LoadedCatalog":
        lines = [line + b"\n" for line in snap.payload.splitlines()]
        docs = [CatalogDocument.model_validate_json(line) for line in lines]
        keyed = {(d.tenant_id, d.document_id): line for d, line in zip(docs, lines, strict=True)}
        return cls(snap.fingerprint, Catalog(docs), keyed)

    def version(self, request: Request) -> str:
        """The version of the entries that `request` touches."""
        lines = self.lines
        return slice_version(lines[k] for k in request_keys(request) if k in lines)


class SharedCatalogs:
    """The loaded catalog of the latest snapshot, one per worker process.

    Built through Beam's `Shared` (the handle is made with the pipeline and
    pickled with the DoFn, so a worker's threads share one), and rebuilt only
    when a snapshot with another fingerprint arrives: a worker holds one
    parsed catalog, not one per thread. Each reader keeps the one it last
    used, so the shared map is consulted only on a change.
    """

    def __init__(self, handle: Shared) -> None:
        self._handle = handle
        self._last: LoadedCatalog | None = None

    def get(self, snap: CatalogSnapshot) -> LoadedCatalog:
        last = self._last
        if last is None or last.fingerprint != snap.fingerprint:
            last = self._last = self._handle.acquire(
                lambda: LoadedCatalog.of(snap), tag=snap.fingerprint
            )
        return last


class ReadCatalogDocuments(beam.PTransform[beam.pvalue.PBegin, beam.PCollection[CatalogDocument]]):
    """Every CatalogDocument of a JSONL or Parquet file or glob."""

    def __init__(self, pattern: str, file_format: FileFormat) -> None:
        super().__init__()
        self._pattern = pattern
        self._format = file_format

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[CatalogDocument]:
        return (
            pbegin
            | "Read" >> ReadRecords(self._pattern, self._format)
            | "Parse" >> beam.MapTuple(parse_catalog_row)
        )


class ReadCatalog(beam.PTransform[beam.pvalue.PBegin, beam.PCollection[CatalogSnapshot]]):
    """The catalog file(s) as a single `CatalogSnapshot` element (use with AsSingleton)."""

    def __init__(self, pattern: str, file_format: FileFormat) -> None:
        super().__init__()
        self._pattern = pattern
        self._format = file_format

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[CatalogSnapshot]:
        return (
            pbegin
            | "Documents" >> ReadCatalogDocuments(self._pattern, self._format)
            | "Canonical" >> beam.Map(canonical_row)  # bytes travel cheaper than documents
            | "All" >> beam.combiners.ToList()
            | "Snapshot" >> beam.Map(snapshot_of_rows)
        )


class SnapshotReader:
    """Reads the catalog from a snapshot (the side input), loaded once per worker."""

    def __init__(self, catalogs: Shared) -> None:
        self._catalogs = SharedCatalogs(catalogs)

    def view(self, request: Request, snapshot: CatalogSnapshot) -> CatalogView:
        loaded = self._catalogs.get(snapshot)
        return CatalogView(request, loaded.catalog, loaded.version(request))


class SideInputCatalog:
    """The catalog as one snapshot side input (small catalogs; `--catalog_mode=side_input`)."""

    def __init__(self, snapshot: beam.PCollection[CatalogSnapshot]) -> None:
        self._snapshot = snapshot

    def attach(self, requests: beam.PCollection[Request]) -> Attached:
        side_input = beam.pvalue.AsSingleton(self._snapshot)
        return Attached(requests, (side_input,), partial(SnapshotReader, Shared()))
