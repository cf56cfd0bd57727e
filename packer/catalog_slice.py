"""The part of the catalog one request touches: its keys, and the version of that part.

A request is gated against the catalog entries of (its tenant, each candidate's
document), and nothing else. Those keys are what the join fetches and what a
keyed store is asked for. The manifest names the version of exactly those
entries: the SHA-256 of their canonical JSON lines, sorted. That version is the
same whichever way the entries arrived (side input, join, Bigtable), changes
whenever a fact that gated the request changes (a grant, a deletion, a new
revision), and can be recomputed by an auditor from the catalog of that moment.

Rejected: the fingerprint of the whole catalog file. It differs between a
snapshot and a keyed store holding the same facts, and it changes for every
request when any unrelated document changes, so it cannot tell an auditor
whether the facts behind one prompt moved. Rejected too: the keyed store's
cell timestamps alone. They say when an entry was written, not what it said,
and a reload of unchanged content would look like a new version.
"""

import hashlib
import json
from collections.abc import Iterable

from schemas import CatalogDocument, Request

CatalogKey = tuple[str, str]
"""(tenant_id, document_id): how the catalog is keyed."""


def request_keys(request: Request) -> list[CatalogKey]:
    """The distinct catalog keys the gates will look up for `request`, sorted."""
    tenant = request.tenant_id
    return sorted({(tenant, c.document_id) for c in request.candidates if c.document_id})


def canonical_line(doc: CatalogDocument) -> bytes:
    """The document as one canonical JSON line (sorted keys, newline-terminated)."""
    return json.dumps(doc.model_dump(mode="json"), sort_keys=True).encode() + b"\n"


def slice_version(lines: Iterable[bytes]) -> str:
    """The version of the catalog entries a request was packed against (order-free)."""
    return hashlib.sha256(b"".join(sorted(lines))).hexdigest()[:16]
