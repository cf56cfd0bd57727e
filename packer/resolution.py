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


@dataclass(frozen=True, slots=True)
class _Sources:
    """What the catalog says of each member: its document, source and authority rank."""

    by_id: dict[str, Evidence]
    catalog: Catalog
    tenant_id: str
    ranking: dict[str, int]

    def doc(self, evidence_id: str) -> CatalogDocument | None:
        return self.catalog.get(self.tenant_id, self.by_id[evidence_id].document_id)

    def source(self, evidence_id: str) -> str | None:
        document = self.doc(evidence_id)
        return document.source if document else None

    def rank(self, evidence_id: str) -> int:
        named = self.source(evidence_id)
        return (
            self.ranking.get(named, len(self.ranking)) if named is not None else len(self.ranking)
        )


def _exclude(
    out: Resolved,
    rule: str,
    kept: list[str],
    left: dict[str, tuple[ExclusionReason, str]],
    detail: str,
) -> list[str]:
    """Exclude `left` by `rule`, write the decision down, and give the members kept."""
    out.excluded.update(left)
    out._record(rule, kept, list(left), detail)
    return kept


def _applicable(
    members: list[str], sources: _Sources, request: Request, config: ResolutionConfig, out: Resolved
) -> list[str]:
    """The members that apply to the request's jurisdiction and product version."""
    for attribute in config.applicability:
        value: str | None = getattr(request, attribute)
        if value is None:
            continue
        applying = [m for m in members if _applies(sources.doc(m), attribute, value)]
        if applying and len(applying) < len(members):
            detail = f"{attribute} {value}"
            reason = (ExclusionReason.NOT_APPLICABLE, f"{detail}: not in the catalog's")
            left = {m: reason for m in members if m not in applying}
            members = _exclude(out, attribute, applying, left, detail)
    return members


def _authoritative(
    members: list[str], sources: _Sources, config: ResolutionConfig, out: Resolved
) -> list[str]:
    """The members of the best-ranked source, when the ranking tells them apart."""
    best = min(sources.rank(m) for m in members)
    top = [m for m in members if sources.rank(m) == best]
    if len(top) == len(members):
        return members
    winner = config.authority[best]
    left = {
        m: (ExclusionReason.LOWER_AUTHORITY, f"source {winner} ranks above {sources.source(m)}")
        for m in members
        if m not in top
    }
    return _exclude(out, "authority", top, left, f"ranking {' > '.join(config.authority)}")


def resolve(
    conflicts: Sequence[tuple[str, ...]],
    kinds: Sequence[tuple[str, ...]],
    kept: Sequence[Evidence],
    catalog: Catalog,
    request: Request,
    config: ResolutionConfig,
) -> Resolved:
    """Each conflict group through applicability, authority, then keep_both."""
    out = Resolved()
    ranking = {source: rank for rank, source in enumerate(config.authority)}
    sources = _Sources({r.evidence_id: r for r in kept}, catalog, request.tenant_id, ranking)
    for group, found_by in zip(conflicts, kinds, strict=True):
        members = _applicable(list(group), sources, request, config, out)
        if len(members) > 1 and config.policy == "authority":
            members = _authoritative(members, sources, config, out)
        if len(members) > 1:
            out.conflicts.append(tuple(members))
            out.kinds.append(found_by)
            out._record("keep_both", members, [], "both sides kept and flagged")
    return out
