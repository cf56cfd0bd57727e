"""Each gate rule, with the edge cases a reviewer would try."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packer import Catalog, PackerRuntime, pack_request
from packer.layout import parse_blocks
from schemas import PackingConfig, Principal, Revision
from schemas.reasons import ExclusionReason
from tests.factories import candidate, document, request, sha


@pytest.fixture(scope="module")
def runtime() -> PackerRuntime:
    return PackerRuntime.load()


def reasons(result) -> dict[str, str]:
    return {x.evidence_id: x.reason.value for x in result.exclusions}


def packed(result) -> set[str]:
    return {e.evidence_id for e in result.manifest.evidence}


def run(runtime, catalog_docs, *cands, **req):
    return pack_request(request(*cands, **req), Catalog(catalog_docs), PackingConfig(), runtime)


def test_same_document_id_in_another_tenant_is_not_authorization(runtime):
    docs = [document("d1", tenant_id="t2", allowed_users=("u1",))]
    result = run(runtime, docs, candidate("e1", "d1"))
    assert reasons(result) == {"e1": "unknown_document"}


def test_candidate_claiming_another_tenant_is_its_own_withheld_reason(runtime):
    docs = [document("d1"), document("d1", tenant_id="t2")]
    result = run(runtime, docs, candidate("e1", "d1", tenant_id="t2"))
    assert reasons(result) == {"e1": "other_tenant"}
    assert ExclusionReason.OTHER_TENANT.withheld  # an answer repeating it leaks it


def test_group_only_access_admits_and_missing_group_refuses(runtime):
    docs = [document("d1", allowed_groups=("support",)), document("d2", allowed_groups=("legal",))]
    result = run(runtime, docs, candidate("e1", "d1"), candidate("e2", "d2"))
    assert packed(result) == {"e1"}
    assert reasons(result) == {"e2": "unauthorized"}


def test_user_grant_admits_without_group(runtime):
    docs = [document("d1", allowed_groups=(), allowed_users=("u1",))]
    principal = Principal(user_id="u1", groups=())
    result = run(runtime, docs, candidate("e1", "d1"), principal=principal)
    assert packed(result) == {"e1"}


def test_candidate_acl_snapshot_is_not_trusted(runtime):
    docs = [document("d1", allowed_groups=("legal",))]
    result = run(runtime, docs, candidate("e1", "d1", acl_snapshot=("support",)))
    assert reasons(result) == {"e1": "unauthorized"}


def test_unknown_document_fails_closed(runtime):
    result = run(runtime, [document("d1")], candidate("e1", "nope"))
    assert reasons(result) == {"e1": "unknown_document"}


def test_deleted_document(runtime):
    result = run(runtime, [document("d1", deleted=True)], candidate("e1", "d1"))
    assert reasons(result) == {"e1": "deleted"}


@pytest.mark.parametrize("field", ["revision_id", "source_url", "text_sha256", "tenant_id"])
def test_missing_provenance(runtime, field):
    result = run(runtime, [document("d1")], candidate("e1", "d1", **{field: None}))
    assert reasons(result) == {"e1": "missing_provenance"}


def test_span_can_stand_in_for_chunk_id(runtime):
    text = "Returns within 30 days."
    cand = candidate("e1", "d1", text=text, chunk_id=None, span={"start": 0, "end": len(text)})
    result = run(runtime, [document("d1")], cand)
    assert packed(result) == {"e1"}
    assert result.manifest.evidence[0].chunk_id == f"span:0-{len(text)}"


def test_hash_mismatch(runtime):
    result = run(runtime, [document("d1")], candidate("e1", "d1", text_sha256=sha("other text")))
    assert reasons(result) == {"e1": "hash_mismatch"}


def test_text_that_is_not_valid_unicode_cannot_match_its_hash(runtime):
    # Validation refuses such text; a candidate built around it must still fail closed.
    # Built around validation at both levels: a Request re-checks the candidates it holds.
    broken = {"text": "broken \ud800 text", "text_sha256": "0" * 64}
    cand = candidate("e1", "d1").model_copy(update=broken)
    held = request(candidate("e1", "d1")).model_copy(update={"candidates": (cand,)})
    result = pack_request(held, Catalog([document("d1")]), PackingConfig(), runtime)
    assert reasons(result) == {"e1": "hash_mismatch"}
    assert result.exclusions[0].detail == "text is not valid Unicode (lone surrogate)"


def _versioned(**fields):
    return document(
        "d1",
        revisions=(
            Revision(revision_id="r1", effective_at="2026-01-01T00:00:00Z"),
            Revision(revision_id="r2", effective_at="2026-03-01T00:00:00Z", supersedes="r1"),
            Revision(revision_id="r3", effective_at="2026-07-01T00:00:00Z", supersedes="r2"),
            Revision(revision_id="r4", effective_at="2026-09-01T00:00:00Z", supersedes="r3"),
        ),
        **fields,
    )


def _four_revisions():
    return [
        candidate(f"e{i}", "d1", revision_id=f"r{i}", text=f"Rule version {i}.")
        for i in range(1, 5)
    ]


def test_supersedes_chain_and_revision_effective_exactly_at_as_of(runtime):
    result = run(runtime, [_versioned()], *_four_revisions())
    assert packed(result) == {"e3"}  # r3 takes effect exactly at as_of
    assert reasons(result) == {"e1": "superseded", "e2": "superseded", "e4": "not_yet_effective"}


def test_history_keeps_earlier_revisions_but_not_future_ones(runtime):
    result = run(runtime, [_versioned()], *_four_revisions(), history=True)
    assert packed(result) == {"e1", "e2", "e3"}
    assert reasons(result) == {"e4": "not_yet_effective"}
    revisions = {e.revision_id for e in result.manifest.evidence}
    assert revisions == {"r1", "r2", "r3"}
    # the revisions' dates tell the model which version says what
    assert 'effective="2026-01-01"' in result.prompt.messages[1].content
    plain = run(runtime, [_versioned()], *_four_revisions())
    assert "effective=" not in plain.prompt.messages[1].content


def test_revision_unknown_to_catalog(runtime):
    result = run(runtime, [document("d1")], candidate("e1", "d1", revision_id="r9"))
    assert reasons(result) == {"e1": "unknown_document"}


def test_candidate_effective_at_is_not_trusted(runtime):
    cand = candidate("e1", "d1", revision_id="r2", effective_at="2020-01-01T00:00:00Z")
    docs = [
        document("d1", revisions=(Revision(revision_id="r2", effective_at="2027-01-01T00:00:00Z"),))
    ]
    assert reasons(run(runtime, docs, cand)) == {"e1": "not_yet_effective"}


def test_as_of_defaults_to_event_time(runtime):
    docs = [_versioned()]
    result = run(runtime, docs, *_four_revisions(), as_of=None, event_time="2026-04-01T00:00:00Z")
    assert packed(result) == {"e2"}


def test_policy_gate_sensitivity_against_clearance(runtime):
    docs = [document("d1", sensitivity="confidential"), document("d2"), document("d3")]
    cands = [
        candidate("e1", "d1"),
        candidate("e2", "d2", sensitivity="restricted"),
        candidate("e3", "d3", sensitivity="made-up"),
    ]
    result = run(runtime, docs, *cands)
    assert reasons(result) == {
        "e1": "policy_blocked",
        "e2": "policy_blocked",
        "e3": "policy_blocked",
    }
    cleared = Principal(user_id="u1", groups=("support",), clearance="restricted")
    result = run(runtime, docs, *cands[:2], principal=cleared)
    assert packed(result) == {"e1", "e2"}


def test_gates_run_in_order_unauthorized_before_provenance(runtime):
    docs = [document("d1", allowed_groups=("legal",))]
    result = run(runtime, docs, candidate("e1", "d1", source_url=None))
    assert reasons(result) == {"e1": "unauthorized"}


@pytest.mark.parametrize("blank", ["\n", " ", "\u3000\t\r\n"])
def test_blank_text_is_left_out_after_the_withheld_gates(runtime, blank):
    docs = [document("d1"), document("d2", deleted=True)]
    result = run(
        runtime, docs, candidate("e1", "d1", text=blank), candidate("e2", "d2", text=blank)
    )
    assert reasons(result) == {"e1": "blank_text", "e2": "deleted"}


def test_a_blank_text_never_makes_the_compact_framing_read_a_note_as_evidence(runtime):
    """Under a tight budget a block has no closing label: a packed empty block would take
    the facets note after it for its text."""
    long = "The price " + " and ".join(f"item {i} costs {i} dollars" for i in range(200))
    cands = [
        candidate("e1", "d1"),
        candidate("e2", "d1", text="\n", chunk_id="c-blank"),
        candidate("e3", "d1", text=long, chunk_id="c-long", query_facets=("price",)),
    ]
    budget = {"max_evidence_tokens": 120}
    result = run(runtime, [document("d1")], *cands, facets=("price",), budget=budget)
    user = result.prompt.messages[1].content
    assert "</E" not in user and "Required facets without evidence" in user  # compact
    assert reasons(result) == {"e2": "blank_text", "e3": "oversized"}
    shown = parse_blocks(user)
    assert shown == {
        e.label: "Passage e1 about returns and refunds." for e in result.manifest.evidence
    }


WHITE_SPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)
"""Every character Python's `str.split()` splits on, written out rather than derived."""


@given(
    spaces=st.text(st.sampled_from(WHITE_SPACE), max_size=12),
    visible=st.one_of(st.none(), st.characters(exclude_categories=("Cs", "Zs", "Zl", "Zp", "Cc"))),
    at=st.integers(0, 12),
)
def test_blank_text_is_white_space_alone(runtime, spaces, visible, at):
    """Left out as blank only when every character is white space (the empty text too);
    one visible character anywhere keeps the candidate."""
    text = spaces if visible is None else spaces[:at] + visible + spaces[at:]
    result = run(runtime, [document("d1")], candidate("e1", "d1", text=text))
    assert (reasons(result).get("e1") == "blank_text") == (visible is None)
