"""The one interface every audit-row backend in `transforms.io` implements.

A backend is built from the flags (`transforms.sinks.AUDIT_SINKS`) and
applied once per table: `write(rows, name, row_id)` returns a `Written`, the
rows it refused (each a dead letter, e.g. a row BigQuery rejected) and the
files it wrote (which a batch job commits after). The interface lives here,
below the backends and `transforms.sinks` alike, so a backend never imports
the module that chooses it.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import apache_beam as beam

from schemas import DeadLetter

RowId = Callable[[dict[str, Any]], str]
"""A row's BigQuery insertId, so a retried insert does not duplicate it."""


@dataclass(frozen=True)
class Written:
    """What a backend made of a table's rows: the rows it refused, the files it wrote."""

    refused: beam.PCollection[DeadLetter] | None = None
    files: beam.PCollection | None = None


class AuditSink(Protocol):
    """One backend for audit rows (see `transforms.sinks.AUDIT_SINKS`)."""

    def write(self, rows: beam.PCollection, name: str, row_id: RowId | None) -> Written: ...
