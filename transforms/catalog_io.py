"""The document catalog as a side input.

The catalog is trusted configuration, so a malformed catalog row fails the job
with its file and error rather than silently hiding documents (which would
exclude their candidates as `unknown_document`).

The side input is one `CatalogSnapshot`: the documents as canonical JSON lines
in one bytes payload, and a fingerprint of it. A side input is size-measured
and copied per bundle; one bytes object costs nothing to measure or copy,
where thousands of document objects cost a traversal and an unpickling each
time. `CatalogCache` turns a snapshot into a `packer.Catalog` once per worker
and rebuilds it only when the fingerprint changes (a refreshed catalog).
"""

import hashlib
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import apache_beam as beam
from pydantic import ValidationError

from packer import Catalog
from packer.catalog_slice import CatalogKey, canonical_line, request_keys, slice_version
from schemas import CatalogDocument, Request
from schemas._types import describe_validation_error
from transforms.names import FileFormat
from transforms.record_files import ReadRecords, file_records
from transforms.strict_json import Refused, Unreadable, decode_text, loads


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
    of a request record (`transforms.strict_json`: UTF-8, one leading byte-order
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


class CatalogCache:
    """Keeps the `Catalog` of the last snapshot seen, and its lines, for one DoFn instance."""

    def __init__(self) -> None:
        self._fingerprint: str | None = None
        self._catalog: Catalog | None = None
        self._lines: dict[CatalogKey, bytes] = {}

    def get(self, snap: CatalogSnapshot) -> Catalog:
        if self._catalog is None or snap.fingerprint != self._fingerprint:
            lines = [line + b"\n" for line in snap.payload.splitlines()]
            docs = [CatalogDocument.model_validate_json(line) for line in lines]
            self._catalog = Catalog(docs)
            self._lines = {
                (d.tenant_id, d.document_id): line for d, line in zip(docs, lines, strict=True)
            }
            self._fingerprint = snap.fingerprint
        return self._catalog

    def version(self, request: Request) -> str:
        """The version of the last snapshot's entries that `request` touches."""
        lines = self._lines
        return slice_version(lines[k] for k in request_keys(request) if k in lines)


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
