"""The catalog-provider interface: what every backend in `transforms.catalog` implements.

A provider attaches what it needs to the requests (`Attached`: a side input,
a join) and names how a pack DoFn instance opens its `CatalogReader`, which
gives each element's request with the catalog entries it may see
(`CatalogView`). These types live here, below the providers and the pack
step alike, so a provider never imports the module that uses it.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import apache_beam as beam

from packer import Catalog
from schemas import DeadLetter, Request


@dataclass(frozen=True)
class CatalogView:
    """A request with the catalog entries it may see, and the version of those entries."""

    request: Request
    catalog: Catalog
    version: str


class CatalogReader(Protocol):
    """One DoFn instance's access to the catalog, opened in `setup()`."""

    def view(self, element: Any, *side_inputs: Any) -> CatalogView | DeadLetter:
        """The element's request and its catalog, or a dead letter (e.g. an unreadable entry)."""
        ...


@dataclass(frozen=True)
class Attached:
    """What a catalog provider adds to the requests for the pack step.

    `elements` are what the pack DoFn reads (the requests, or the requests
    with their joined catalog rows), `side_inputs` its side inputs, and
    `open_reader` (pickled with the DoFn) opens its `CatalogReader` on a worker.
    """

    elements: beam.PCollection
    side_inputs: tuple[Any, ...]
    open_reader: Callable[[], CatalogReader]


class CatalogProvider(Protocol):
    """Where the pack step finds each request's catalog entries (one per `--catalog_mode`)."""

    def attach(self, requests: beam.PCollection[Request]) -> Attached: ...
