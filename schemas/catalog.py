"""The canonical document catalog: the only source of truth for access and revisions."""

from pydantic import BaseModel, ConfigDict, model_validator

from schemas._types import EffectiveDatetime, NonEmptyStr, refuse_repeats


class Revision(BaseModel):
    """One revision of a document; `supersedes` names the revision it replaces."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    revision_id: NonEmptyStr
    effective_at: EffectiveDatetime
    supersedes: str | None = None


class CatalogDocument(BaseModel):
    """Access and version facts for one (tenant, document).

    `source` is the kind of publisher an authority ranking names ("regulator",
    "vendor"); `jurisdictions` and `product_versions` are where and to what the
    document applies (empty: everywhere, every version). They resolve conflicts
    (`schemas.config.ResolutionConfig`); they are never read from a candidate.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    tenant_id: NonEmptyStr
    document_id: NonEmptyStr
    allowed_users: tuple[str, ...] = ()
    allowed_groups: tuple[str, ...] = ()
    deleted: bool = False
    sensitivity: str | None = None
    revisions: tuple[Revision, ...] = ()
    source: str | None = None
    jurisdictions: tuple[str, ...] = ()
    product_versions: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _distinct_revisions(self) -> "CatalogDocument":
        """A revision listed twice would be looked up as one of its copies, without a word."""
        refuse_repeats("revision", (r.revision_id for r in self.revisions))
        return self
