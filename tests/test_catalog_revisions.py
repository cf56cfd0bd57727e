"""`Catalog.revision_state` over arbitrary `supersedes` graphs: cycles, self-references."""

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from packer import Catalog
from schemas import CatalogDocument, Revision

BASE = datetime(2026, 1, 1, tzinfo=UTC)
IDS = ("r1", "r2", "r3", "r4", "r5", "r6")


@st.composite
def graphs(draw: st.DrawFn) -> tuple[list[Revision], datetime]:
    """1-6 revisions, each naming none, any revision (itself included) or an unknown one."""
    ids = IDS[: draw(st.integers(1, len(IDS)))]
    revisions = [
        Revision(
            revision_id=rid,
            effective_at=BASE + timedelta(days=draw(st.integers(0, 3))),
            supersedes=draw(st.sampled_from([None, *ids, "unknown"])),
        )
        for rid in ids
    ]
    return draw(st.permutations(revisions)), BASE + timedelta(days=draw(st.integers(-1, 3)))


def _state(revisions: list[Revision], as_of: datetime) -> tuple[str | None, frozenset[str]]:
    doc = CatalogDocument(tenant_id="t", document_id="d", revisions=tuple(revisions))
    state = Catalog([doc]).revision_state("t", "d", as_of)
    return state.applicable, state.effective


def _reach(rid: str, names: dict[str, str | None]) -> set[str]:
    """Every revision reachable from `rid` by one or more `supersedes` steps."""
    found: set[str] = set()
    target = names.get(rid)
    while target is not None and target not in found:
        found.add(target)
        target = names.get(target)
    return found


def _expected(revisions: list[Revision], as_of: datetime) -> str | None:
    """The documented rule, read literally: superseded = reached from an effective
    revision that it does not reach back (no revision supersedes its own cycle)."""
    names = {r.revision_id: r.supersedes for r in revisions}
    effective = [r for r in revisions if r.effective_at <= as_of]
    superseded = {
        r.revision_id
        for r in effective
        for e in effective
        if r.revision_id in _reach(e.revision_id, names)
        and e.revision_id not in _reach(r.revision_id, names)
    }
    heads = [r for r in effective if r.revision_id not in superseded]
    best = max(heads, key=lambda r: (r.effective_at, r.revision_id), default=None)
    return best.revision_id if best else None


@given(graphs())
def test_one_rule_for_every_supersedes_graph(graph: tuple[list[Revision], datetime]) -> None:
    revisions, as_of = graph
    applicable, effective = _state(revisions, as_of)
    assert applicable == _expected(revisions, as_of)
    # Whenever some revision is effective, one applies: no cycle leaves a document empty.
    assert (applicable is None) == (not effective)
    # Listing order never matters.
    assert _state(revisions[::-1], as_of)[0] == applicable
    # Naming itself is the same as naming nothing.
    plain = [
        r.model_copy(update={"supersedes": None}) if r.supersedes == r.revision_id else r
        for r in revisions
    ]
    assert _state(plain, as_of)[0] == applicable


def test_a_self_superseding_revision_has_the_same_state_with_or_without_a_sibling() -> None:
    day = BASE + timedelta(days=1)
    self_ref = Revision(revision_id="r1", effective_at=BASE, supersedes="r1")
    assert _state([self_ref], day)[0] == "r1"
    older = Revision(revision_id="r0", effective_at=BASE - timedelta(days=1))
    assert _state([self_ref, older], day)[0] == "r1"


def test_a_two_cycle_is_decided_by_date_and_a_chain_into_it_supersedes_it() -> None:
    day = BASE + timedelta(days=5)
    r1 = Revision(revision_id="r1", effective_at=BASE, supersedes="r2")
    r2 = Revision(revision_id="r2", effective_at=BASE + timedelta(days=1), supersedes="r1")
    assert _state([r1, r2], day)[0] == "r2"
    r3 = Revision(revision_id="r3", effective_at=BASE - timedelta(days=9), supersedes="r1")
    assert _state([r1, r2, r3], day)[0] == "r3"
