"""Conflict resolution policies: applicability, authority, keep_both; each written down."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from packer import Catalog, PackerRuntime, pack_request
from schemas import DedupConfig, PackingConfig, ResolutionConfig
from tests.factories import candidate, document, request

RUNTIME = PackerRuntime.load()
REPORT = (
    "The city council approved a budget of 4,000 dollars for the new library on Monday, "
    "and Mayor Jane Smith said construction would begin in March."
)


def _figure(n: int) -> str:
    return REPORT.replace("4,000", f"{n},000")


def _pack(docs, cands, config=None, **fields):
    return pack_request(
        request(*cands, **fields), Catalog(docs), config or PackingConfig(), RUNTIME
    )


def _two(**attrs):
    """Two documents reporting different figures; `attrs` are (d1 fields, d2 fields)."""
    first, second = attrs.get("d1", {}), attrs.get("d2", {})
    docs = [document("d1", **first), document("d2", **second)]
    cands = [
        candidate("e1", "d1", text=_figure(4), retrieval_score=0.9),
        candidate("e2", "d2", text=_figure(9), retrieval_score=0.1),
    ]
    return docs, cands


def test_keep_both_is_the_default_and_is_written_down():
    result = _pack(*_two())
    assert [e.evidence_id for e in result.manifest.evidence] == ["e1", "e2"]
    [resolution] = result.manifest.resolutions
    assert (resolution.rule, resolution.kept, resolution.excluded) == (
        "keep_both",
        ["e1", "e2"],
        [],
    )
    assert result.manifest.conflicts[0].evidence_ids == ["e1", "e2"]


AUTHORITY = PackingConfig(
    resolution=ResolutionConfig(policy="authority", authority=("regulator", "vendor"))
)


def test_authority_keeps_the_higher_source_and_names_the_rule():
    # the lower-ranked side is the better-scored one: authority, not score, decides
    docs, cands = _two(d1={"source": "vendor"}, d2={"source": "regulator"})
    result = _pack(docs, cands, AUTHORITY)
    assert [e.evidence_id for e in result.manifest.evidence] == ["e2"]
    assert [(x.evidence_id, x.reason.value) for x in result.exclusions] == [
        ("e1", "lower_authority")
    ]
    [resolution] = result.manifest.resolutions
    assert (resolution.rule, resolution.kept, resolution.excluded) == ("authority", ["e2"], ["e1"])
    assert "regulator > vendor" in resolution.detail
    assert result.manifest.conflicts == []


def test_authority_that_cannot_tell_the_sides_apart_keeps_both():
    docs, cands = _two(d1={"source": "blog"}, d2={"source": "forum"})  # neither is ranked
    result = _pack(docs, cands, AUTHORITY)
    assert len(result.manifest.evidence) == 2
    assert [r.rule for r in result.manifest.resolutions] == ["keep_both"]


@pytest.mark.parametrize(
    ("attribute", "declared", "asked"),
    [("jurisdiction", "jurisdictions", "EU"), ("product_version", "product_versions", "2.0")],
)
def test_what_does_not_apply_to_the_request_is_excluded(attribute, declared, asked):
    docs, cands = _two(d1={declared: ("elsewhere",)}, d2={declared: (asked, "other")})
    result = _pack(docs, cands, **{attribute: asked})
    assert [(x.evidence_id, x.reason.value) for x in result.exclusions] == [
        ("e1", "not_applicable")
    ]
    [resolution] = result.manifest.resolutions
    assert (resolution.rule, resolution.kept, resolution.excluded) == (attribute, ["e2"], ["e1"])
    # without the request saying which applies, the catalog's scope decides nothing
    assert len(_pack(docs, cands).manifest.evidence) == 2


def test_when_nothing_applies_nothing_is_excluded():
    docs, cands = _two(d1={"jurisdictions": ("US",)}, d2={"jurisdictions": ("UK",)})
    result = _pack(docs, cands, jurisdiction="EU")
    assert result.exclusions == [] and len(result.manifest.evidence) == 2


def test_authority_needs_a_ranking_without_repeats():
    with pytest.raises(ValidationError, match="needs a ranking"):
        ResolutionConfig(policy="authority")
    with pytest.raises(ValidationError, match="twice"):
        ResolutionConfig(policy="authority", authority=("a", "a"))


SOURCES = st.sampled_from([None, "regulator", "vendor", "blog"])
SCOPES = st.sampled_from([(), ("EU",), ("US",), ("EU", "US")])


@given(
    figures=st.lists(st.integers(1, 9), min_size=2, max_size=6),
    copies=st.lists(st.booleans(), min_size=6, max_size=6),
    sources=st.lists(SOURCES, min_size=6, max_size=6),
    scopes=st.lists(SCOPES, min_size=6, max_size=6),
    policy=st.sampled_from(["keep_both", "authority"]),
    jurisdiction=st.sampled_from([None, "EU", "US"]),
    budget=st.sampled_from([60, 200, 2000]),
    mayors=st.lists(
        st.sampled_from(["Jane Smith", "Ada Byron", "Wu Chen"]), min_size=6, max_size=6
    ),
    rules=st.sampled_from([("copy",), ("copy", "slot", "name")]),
)
def test_resolution_conserves_every_candidate(
    figures, copies, sources, scopes, policy, jurisdiction, budget, mayors, rules
):
    """Every candidate is in a block, a `derived_from`, or one exclusion row; every
    one a rule excluded is in that rule's resolution row; with the typed rules on
    too (the mayor's name answers the question's name slot)."""
    docs, cands = [], []
    for i, n in enumerate(figures):
        text = _figure(n).replace("Mayor Jane Smith", mayors[i])
        docs.append(document(f"d{i}", source=sources[i], jurisdictions=scopes[i]))
        cands.append(candidate(f"e{i}", f"d{i}", text=text, retrieval_score=i / 10))
        if copies[i]:  # an exact copy in another document folds into this one
            docs.append(document(f"c{i}"))
            cands.append(candidate(f"c{i}", f"c{i}", text=text.upper()))
    config = PackingConfig(
        max_evidence_tokens=budget,
        dedup=DedupConfig(conflict_rules=rules),
        resolution=ResolutionConfig(policy=policy, authority=("regulator", "vendor")),
    )
    question = "Who said construction would begin in March?"
    result = _pack(docs, cands, config, jurisdiction=jurisdiction, question=question)
    packed = [e.evidence_id for e in result.manifest.evidence]
    derived = [d for e in result.manifest.evidence for d in e.derived_from]
    excluded = [x.evidence_id for x in result.exclusions]
    assert sorted(packed + derived + excluded) == sorted(c.evidence_id for c in cands)
    ruled_out = {x.evidence_id for x in result.exclusions if x.reason.value in RULED}
    written = {e for r in result.manifest.resolutions for e in r.excluded}
    assert ruled_out == written
    for r in result.manifest.resolutions:
        assert sorted(r.kept + r.excluded) == r.evidence_ids
    assert not any(set(c.evidence_ids) & written for c in result.manifest.conflicts)


RULED = {"not_applicable", "lower_authority"}


def test_the_name_rule_links_documents_naming_another_mayor():
    """The conservation property above reaches name conflicts: two documents with
    the same figure and different mayors are one group under the name rule."""
    docs = [document("d1"), document("d2")]
    cands = [
        candidate("e1", "d1", text=_figure(4).replace("Mayor Jane Smith", "Jane Smith")),
        candidate("e2", "d2", text=_figure(4).replace("Mayor Jane Smith", "Ada Byron")),
    ]
    config = PackingConfig(dedup=DedupConfig(conflict_rules=("name",)))
    question = "Who said construction would begin in March?"
    result = _pack(docs, cands, config, question=question)
    assert [(c.evidence_ids, c.rules) for c in result.manifest.conflicts] == [
        (["e1", "e2"], ["name"])
    ]
