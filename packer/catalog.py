"""The document catalog as a lookup table, and revision applicability."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from schemas import CatalogDocument, Revision


@dataclass(frozen=True)
class RevisionState:
    """Where one revision stands at `as_of`: applicable, superseded, or not yet effective."""

    applicable: str | None
    effective: frozenset[str]
    revisions: Mapping[str, Revision]


class Catalog:
    """Canonical access and version facts, keyed by (tenant_id, document_id).

    Immutable once built, so one instance can be shared by all threads of a worker.
    """

    def __init__(self, documents: Iterable[CatalogDocument]) -> None:
        table: dict[tuple[str, str], CatalogDocument] = {}
        for doc in documents:
            key = (doc.tenant_id, doc.document_id)
            if key in table:
                raise ValueError(f"catalog lists document {key} twice")
            table[key] = doc
        self._documents = table
        self._revisions: dict[tuple[str, str], dict[str, Revision]] = {
            key: {r.revision_id: r for r in doc.revisions} for key, doc in table.items()
        }
        # The common case, one revision: its two possible states, built once.
        self._single: dict[tuple[str, str], tuple[Revision, RevisionState, RevisionState]] = {}
        for key, revisions in self._revisions.items():
            if len(revisions) == 1:
                [only] = revisions.values()
                self._single[key] = (
                    only,
                    RevisionState(only.revision_id, frozenset([only.revision_id]), revisions),
                    RevisionState(None, frozenset(), revisions),
                )

    def __len__(self) -> int:
        return len(self._documents)

    def get(self, tenant_id: str, document_id: str) -> CatalogDocument | None:
        """The catalog entry, or None for an unknown document (callers fail closed)."""
        return self._documents.get((tenant_id, document_id))

    def revision_state(self, tenant_id: str, document_id: str, as_of: datetime) -> RevisionState:
        """Which revision applies at `as_of`.

        Effective revisions are those with `effective_at <= as_of`. A revision is
        superseded when an effective revision names it in `supersedes`, directly or
        through a chain. Of the remaining heads, the one with the latest
        `effective_at` (ties: greatest `revision_id`) applies.

        Cycles: a revision never supersedes itself, directly (`supersedes` naming
        itself) or through a cycle (r1 -> r2 -> r1). A chain that comes back to
        the revision it started from says nothing about which is newer, so it
        supersedes nothing and the date rule decides among its members; a chain
        that runs into a cycle it did not start on supersedes the whole cycle.
        So whenever some revision is effective, exactly one applies, whatever
        the graph, and a revision's state does not depend on its siblings.
        Rejected: refusing the document (fail closed) punishes readers for a
        catalog error that the dates resolve; trusting the first edge of a
        cycle would depend on the order the revisions are listed in.
        """
        single = self._single.get((tenant_id, document_id))
        if single is not None:
            only, applies, not_yet = single
            return applies if only.effective_at <= as_of else not_yet
        revisions = self._revisions.get((tenant_id, document_id), {})
        effective = {rid for rid, r in revisions.items() if r.effective_at <= as_of}
        superseded: set[str] = set()
        for rid in effective:
            superseded |= _superseded_by(rid, revisions)
        heads = [revisions[rid] for rid in effective - superseded]
        applicable = max(heads, key=lambda r: (r.effective_at, r.revision_id), default=None)
        return RevisionState(
            applicable=applicable.revision_id if applicable else None,
            effective=frozenset(effective),
            revisions=revisions,
        )


def _superseded_by(start: str, revisions: Mapping[str, Revision]) -> set[str]:
    """The revisions `start` supersedes: its `supersedes` chain, unless the chain returns to it.

    Each revision names at most one other, so the chain either ends or runs into
    a cycle; it is walked until a revision repeats.
    """
    chain: list[str] = []
    seen = {start}
    target = revisions[start].supersedes
    while target is not None and target not in seen:
        chain.append(target)
        seen.add(target)
        nxt = revisions.get(target)
        target = nxt.supersedes if nxt is not None else None
    if target == start:
        return set()
    return set(chain)
