"""One factory for the pack step's catalog provider, used by the batch and streaming jobs.

A `CatalogSource` (what `--catalog_mode` and the catalog flags resolved to)
becomes the provider that serves it. Streaming re-reads a catalog file every
`refresh_seconds` instead of broadcasting it once, so a revoked grant applies
without a restart; Bigtable lookups already expire after that delay. Rejected:
a `catalog_provider()` per job (the two copies had already drifted in how
they told Bigtable from a file).
"""

from dataclasses import dataclass
from typing import Literal, get_args

import apache_beam as beam

from transforms.catalog.base import CatalogProvider
from transforms.catalog.bigtable import BigtableCatalog, CachedLookup
from transforms.catalog.join import JoinedCatalog
from transforms.catalog.refresh import RefreshingCatalogFile
from transforms.catalog.side_input import ReadCatalog, SideInputCatalog
from transforms.names import FileFormat

CatalogMode = Literal["side_input", "join", "bigtable"]
CATALOG_MODES: tuple[CatalogMode, ...] = get_args(CatalogMode)


@dataclass(frozen=True)
class CatalogSource:
    """The catalog of a run: a file (side input or join) or a Bigtable table."""

    mode: CatalogMode
    pattern: str | None
    file_format: FileFormat | None
    bigtable: CachedLookup | None
    refresh_seconds: float
    """The revocation delay: how often streaming re-reads a file, how long a lookup is cached."""


def catalog_provider(
    pipeline: beam.Pipeline, source: CatalogSource, streaming: bool
) -> CatalogProvider:
    """How the pack step finds each request's catalog entries from `source`."""
    if source.bigtable is not None:
        return BigtableCatalog(source.bigtable)
    pattern, file_format = source.pattern, source.file_format
    if pattern is None or file_format is None:
        raise ValueError(f"--catalog_mode={source.mode} reads a catalog file: pass --catalog")
    if source.mode == "join":
        return JoinedCatalog(pattern, file_format)
    if streaming:
        return RefreshingCatalogFile(pattern, file_format, source.refresh_seconds)
    return SideInputCatalog(pipeline | "ReadCatalog" >> ReadCatalog(pattern, file_format))
