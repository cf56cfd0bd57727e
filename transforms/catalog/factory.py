"""One factory for the pack step's catalog provider, used by the batch and streaming jobs.

A `CatalogSource` (what `--catalog_mode` and the catalog flags resolved to)
becomes the provider that serves it. Streaming re-reads a catalog file every
`refresh_seconds` instead of broadcasting it once, so a revoked grant applies
without a restart; Bigtable lookups already expire after that delay. Rejected:
a `catalog_provider()` per job (the two copies had already drifted in how
they told Bigtable from a file). Each mode is one entry of `PROVIDERS`, whose
names are the modes; rejected: an if-chain over the modes beside a hand list
of their names (two places to edit for a new provider).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

import apache_beam as beam

from packer.parsing.names import FileFormat
from transforms.catalog.base import CatalogProvider
from transforms.catalog.bigtable import BigtableCatalog, CachedLookup
from transforms.catalog.join import JoinedCatalog
from transforms.catalog.refresh import RefreshingCatalogFile
from transforms.catalog.side_input import ReadCatalog, SideInputCatalog


def _file(source: "CatalogSource") -> tuple[str, FileFormat]:
    """The catalog file a file mode reads; a mode without one is a usage error."""
    if source.pattern is None or source.file_format is None:
        raise ValueError(f"--catalog_mode={source.mode} reads a catalog file: pass --catalog")
    return source.pattern, source.file_format


def _side_input(
    pipeline: beam.Pipeline, source: "CatalogSource", streaming: bool
) -> CatalogProvider:
    """A snapshot broadcast once; streaming re-reads the file every `refresh_seconds`."""
    if streaming:
        return RefreshingCatalogFile(*_file(source), source.refresh_seconds)
    return SideInputCatalog(pipeline | "ReadCatalog" >> ReadCatalog(*_file(source)))


ProviderBuilder = Callable[[beam.Pipeline, "CatalogSource", bool], CatalogProvider]
PROVIDERS: dict[str, ProviderBuilder] = {
    "side_input": _side_input,
    "join": lambda pipeline, source, streaming: JoinedCatalog(*_file(source)),
    "bigtable": lambda pipeline, source, streaming: BigtableCatalog(source.bigtable),
}
"""Each `--catalog_mode` and how it builds its provider; a new provider is a module in
`transforms/catalog/` and one entry here (the flag's choices read the names)."""

CatalogMode = Literal[tuple(PROVIDERS)]
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
    return PROVIDERS[source.mode](pipeline, source, streaming)
