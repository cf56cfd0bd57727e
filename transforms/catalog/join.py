"""The catalog joined to the requests by (tenant_id, document_id): cost follows the requests.

    requests ──keys──> refs (key, request_id), one per distinct key of a request
        │                 ├─> Bloom filter of the referenced keys (side input)
        │   catalog lines ┴─> key read cheaply, unreferenced rows dropped where read
        │                 GroupByKey(key): the catalog row + the request ids citing it
        │                 -> (request_id, canonical line), the row parsed once per key
        └──── CoGroupByKey(request_id) -> (request, its catalog lines) -> pack

No worker holds the catalog: a catalog row is read, its key extracted with a
regular expression (JSON parsing only when the line is unusual), and kept
only when the filter admits it; full validation happens once per referenced
document, after the join. A document missing from the catalog simply sends no
line to its requests, which the gates exclude as `unknown_document`, exactly
as with the side input.

Hot keys: a document cited by most requests makes one group of one catalog
row plus a request id per citing request (ids, never requests, and each
request cites a key once). The group is iterated twice, once to find the
catalog row and once to fan it out, never copied into a list, so on Dataflow
a large group is paged from the shuffle rather than held. Rejected:
`with_hot_key_fanout`, which applies to combiners, and a join is not a
combine; salting the key, which must replicate every catalog row to every
salt, multiplying the catalog shuffle to spread the rare hot key.

The catalog is trusted configuration: a bad row that a request references
fails the job with its file, as the side input does; a document listed twice
fails it too, though here only when a request references it (checking every
key would shuffle the whole catalog).
"""

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

import apache_beam as beam

from packer import Catalog
from packer.catalog_slice import CatalogKey, canonical_line, request_keys, slice_version
from packer.parsing.names import FileFormat
from packer.parsing.strict_json import as_text
from schemas import CatalogDocument, Request
from transforms.catalog.base import Attached, CatalogView
from transforms.catalog.key_filter import BuildKeyFilter, KeyFilter
from transforms.catalog.side_input import parse_catalog_row
from transforms.record_files import ReadRecords

_TENANT = re.compile(rb'"tenant_id"\s*:\s*"([^"\\]*)"')
_DOCUMENT = re.compile(rb'"document_id"\s*:\s*"([^"\\]*)"')

_DOC = "doc"
_REF = "ref"


def line_key(line: bytes) -> CatalogKey | None:
    """A catalog line's (tenant_id, document_id), without validating the rest.

    The fast path needs each field exactly once and no escape anywhere in the
    line; anything else (escapes, a nested object repeating a name) is decoded
    as JSON. None when the line has no usable key: it is joined under no key,
    so it cannot reach any request, and it is not validated either.
    """
    if b"\\" not in line:
        tenants = _TENANT.findall(line)
        documents = _DOCUMENT.findall(line)
        if len(tenants) == 1 and len(documents) == 1:
            try:
                return tenants[0].decode(), documents[0].decode()
            except UnicodeDecodeError:
                return None
    try:
        row = json.loads(line)
    except ValueError:  # UnicodeDecodeError included
        return None
    if not isinstance(row, dict):
        return None
    tenant, document = row.get("tenant_id"), row.get("document_id")
    if isinstance(tenant, str) and isinstance(document, str):
        return tenant, document
    return None


def request_refs(request: Request) -> Iterator[tuple[CatalogKey, tuple[str, str]]]:
    """(key, (tag, request_id)) for each distinct catalog key the request touches."""
    for key in request_keys(request):
        yield key, (_REF, request.request_id)


def referenced_rows(
    record: tuple[str, bytes], admitted: KeyFilter
) -> Iterator[tuple[CatalogKey, tuple[str, tuple[str, bytes]]]]:
    """(key, (tag, (source, line))) for a catalog line the filter admits; nothing otherwise."""
    source, line = record
    key = line_key(line) if isinstance(line, bytes) else parse_catalog_row(source, line)  # raises
    if key is not None and key in admitted:
        yield key, (_DOC, (source, line))


def fan_out(
    keyed: tuple[CatalogKey, Iterable[tuple[str, Any]]],
) -> Iterator[tuple[str, bytes]]:
    """(request_id, canonical line) for each request citing the group's document.

    The group is iterated twice (see the module docstring); a key without a
    reference (a filter false positive) or without a document yields nothing.
    """
    key, values = keyed
    rows = [value for tag, value in values if tag == _DOC]
    if not rows:
        return
    if len(rows) > 1:
        raise ValueError(f"catalog lists document {key} twice ({rows[0][0]}, {rows[1][0]})")
    source, line = rows[0]
    doc = parse_catalog_row(source, line)
    if (doc.tenant_id, doc.document_id) != key:
        raise ValueError(
            f"catalog {source}: row keyed {key} parses as another document: {as_text(line)}"
        )
    canonical = canonical_line(doc)
    for tag, value in values:
        if tag == _REF:
            yield value, canonical


def with_lines(
    keyed: tuple[str, dict[str, list[Any]]],
) -> Iterator[tuple[Request, tuple[bytes, ...]]]:
    """(request, its catalog lines, sorted); the request id is unique after parsing."""
    _, grouped = keyed
    for request in grouped["request"]:
        yield request, tuple(sorted(grouped["lines"]))


class JoinCatalog(beam.PTransform):
    """Requests -> (request, the canonical lines of the catalog entries it touches)."""

    def __init__(self, pattern: str, file_format: FileFormat) -> None:
        super().__init__()
        self._pattern = pattern
        self._format = file_format

    def expand(
        self, requests: beam.PCollection[Request]
    ) -> beam.PCollection[tuple[Request, tuple[bytes, ...]]]:
        refs = requests | "Refs" >> beam.FlatMap(request_refs)
        admitted = (
            refs | "RefKeys" >> beam.Keys() | "KeyFilter" >> beam.CombineGlobally(BuildKeyFilter())
        )
        rows = (
            requests.pipeline
            | "ReadCatalog" >> ReadRecords(self._pattern, self._format)
            | "Referenced" >> beam.FlatMap(referenced_rows, beam.pvalue.AsSingleton(admitted))
        )
        lines = (
            (rows, refs)
            | "Tagged" >> beam.Flatten()
            | "ByDocument" >> beam.GroupByKey()
            | "FanOut" >> beam.FlatMap(fan_out)
        )
        by_id = requests | "ById" >> beam.Map(lambda r: (r.request_id, r))
        return (
            {"request": by_id, "lines": lines}
            | "ByRequest" >> beam.CoGroupByKey()
            | "WithLines" >> beam.FlatMap(with_lines)
        )


class JoinedReader:
    """Reads each request's catalog from the lines the join brought it."""

    def view(self, joined: tuple[Request, tuple[bytes, ...]]) -> CatalogView:
        request, lines = joined
        catalog = Catalog(CatalogDocument.model_validate_json(line) for line in lines)
        return CatalogView(request, catalog, slice_version(lines))


class JoinedCatalog:
    """The catalog file(s) joined to the requests by key (`--catalog_mode=join`)."""

    def __init__(self, pattern: str, file_format: FileFormat) -> None:
        self._join = JoinCatalog(pattern, file_format)

    def attach(self, requests: beam.PCollection[Request]) -> Attached:
        return Attached(requests | "JoinCatalog" >> self._join, (), JoinedReader)
