"""Resolving flagged conflicts by seed 002's three rules, and writing each resolution down.

When authorized sources disagree, in this order (`schemas.config.ResolutionConfig`):
choose what applies (the request's jurisdiction or product version against
the catalog's), prefer a declared authority hierarchy (a ranking of catalog
`source` values), or keep both and have the model state the conflict. The
facts come from the catalog only, like every gate's: a candidate cannot
declare itself authoritative or applicable. A rule that leaves nothing, or
cannot tell members apart, resolves nothing: the conflict stays flagged.
Rejected: resolving by the utility weight `authority` (a candidate's own
claim, and a weight trades against relevance instead of naming a rule).
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

from packer.catalog import Catalog
from packer.records import Evidence
from schemas import CatalogDocument, ExclusionReason, Request, ResolutionConfig

_DECLARED = {"jurisdiction": "jurisdictions", "product_version": "product_versions"}


@dataclass(slots=True)
class Resolved:
    """The conflicts still flagged (with the rules that found them), the members a
    rule excluded (id -> reason, detail), and one manifest row per resolution."""

    conflicts: list[tuple[str, ...]] = field(default_factory=list)
    kinds: list[tuple[str, ...]] = field(default_factory=list)
    excluded: dict[str, tuple[ExclusionReason, str]] = field(default_factory=dict)
    rows: list[dict[str, object]] = field(default_factory=list)

    def _record(self, rule: str, kept: list[str], left: list[str], detail: str) -> None:
        """A rule's decision over the members it looked at (`kept` + `left`, in id order)."""
        self.rows.append(
            {"evidence_ids": sorted(kept + left), "rule": rule, "kept": kept, "excluded": left,
             "detail": detail}
        )  # fmt: skip


def _applies(doc: CatalogDocument | None, attribute: str, value: str) -> bool:
    declared: tuple[str, ...] = getattr(doc, _DECLARED[attribute]) if doc else ()
    return not declared or value in declared


def resolve(
    conflicts: Sequence[tuple[str, ...]],
    kinds: Sequence[tuple[str, ...]],
    kept: Sequence[Evidence],
    catalog: Catalog,
    request: Request,
    config: ResolutionConfig,
) -> Resolved:
    """Each conflict group through applicability, authority, then keep_both."""
    by_id = {r.evidence_id: r for r in kept}
    out = Resolved()

    def doc(evidence_id: str) -> CatalogDocument | None:
        return catalog.get(request.tenant_id, by_id[evidence_id].document_id)

    ranking = {source: rank for rank, source in enumerate(config.authority)}

    def source(evidence_id: str) -> str | None:
        document = doc(evidence_id)
        return document.source if document else None

    def rank(evidence_id: str) -> int:
        named = source(evidence_id)
        return ranking.get(named, len(ranking)) if named is not None else len(ranking)

    for group, found_by in zip(conflicts, kinds, strict=True):
        members = list(group)
        for attribute in config.applicability:
            value: str | None = getattr(request, attribute)
            if value is None:
                continue
            applying = [m for m in members if _applies(doc(m), attribute, value)]
            if applying and len(applying) < len(members):
                left = [m for m in members if m not in applying]
                detail = f"{attribute} {value}"
                out.excluded.update(
                    {
                        m: (ExclusionReason.NOT_APPLICABLE, f"{detail}: not in the catalog's")
                        for m in left
                    }
                )
                out._record(attribute, applying, left, detail)
                members = applying
        if len(members) > 1 and config.policy == "authority":
            best = min(rank(m) for m in members)
            top = [m for m in members if rank(m) == best]
            if len(top) < len(members):
                left = [m for m in members if m not in top]
                winner = config.authority[best]
                out.excluded.update(
                    {
                        m: (
                            ExclusionReason.LOWER_AUTHORITY,
                            f"source {winner} ranks above {source(m)}",
                        )
                        for m in left
                    }
                )
                out._record("authority", top, left, f"ranking {' > '.join(config.authority)}")
                members = top
        if len(members) > 1:
            out.conflicts.append(tuple(members))
            out.kinds.append(found_by)
            out._record("keep_both", members, [], "both sides kept and flagged")
    return out
