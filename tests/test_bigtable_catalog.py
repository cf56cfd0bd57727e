"""The Bigtable catalog on the real emulator: loads, lookups, failures; and the TTL cache."""

import pytest

from packer.catalog_slice import canonical_line
from schemas import CatalogDocument
from tests.factories import document
from transforms.catalog.bigtable import TtlCache, UnreadableEntry, documents_of
from transforms.catalog.bigtable_table import (
    CatalogLookupError,
    TableAddress,
    create_table,
    load_catalog,
    open_table,
    read_entries,
)


def _table(project: str, name: str):
    return create_table(TableAddress(project, "evpack", name))


@pytest.mark.emulators
def test_a_load_is_idempotent_and_marks_vanished_documents_deleted(gcp_emulators) -> None:
    table = _table(gcp_emulators.project, "load")
    keep, gone = document("keep"), document("gone", allowed_users=("u1",))
    tricky = document('d"#\\', tenant_id="t#1")
    first = load_catalog(table, [keep, gone, tricky])
    assert (first.written, first.marked_deleted) == (3, 0)
    assert load_catalog(table, [keep, gone, tricky]).marked_deleted == 0

    second = load_catalog(table, [keep, tricky])
    assert (second.written, second.marked_deleted) == (2, 1)
    assert load_catalog(table, [keep, tricky]).marked_deleted == 0  # already deleted
    entries = read_entries(table, [("t1", "keep"), ("t1", "gone"), ("t#1", 'd"#\\'), ("t1", "new")])
    assert entries[("t1", "keep")] == canonical_line(keep)
    assert entries[("t#1", 'd"#\\')] == canonical_line(tricky)
    assert entries[("t1", "new")] is None
    marked = CatalogDocument.model_validate_json(entries[("t1", "gone")])
    assert marked == gone.model_copy(update={"deleted": True})


@pytest.mark.emulators
def test_a_document_listed_twice_stops_the_load(gcp_emulators) -> None:
    table = _table(gcp_emulators.project, "twice")
    with pytest.raises(ValueError, match="twice"):
        load_catalog(table, [document("d1"), document("d1")])


@pytest.mark.emulators
def test_a_failed_lookup_raises_rather_than_reading_no_document(gcp_emulators) -> None:
    missing_table = open_table(TableAddress(gcp_emulators.project, "evpack", "never-created"))
    with pytest.raises(CatalogLookupError):
        read_entries(missing_table, [("t1", "d1")], attempts=2)


def test_an_unreadable_or_misplaced_entry_is_refused() -> None:
    good = canonical_line(document("d1"))
    docs, lines = documents_of({("t1", "d1"): good, ("t1", "d2"): None})
    assert [d.document_id for d in docs] == ["d1"] and lines == [good]
    with pytest.raises(UnreadableEntry, match="unreadable"):
        documents_of({("t1", "d1"): b'{"tenant_id": "t1"}'})
    with pytest.raises(UnreadableEntry, match="holds document"):
        documents_of({("t1", "d9"): good})


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_cache_fetches_once_per_ttl_and_stays_bounded() -> None:
    clock = _Clock()
    cache = TtlCache(capacity=2, ttl=10.0, clock=clock)
    fetched: list[list] = []

    def fetch(keys):
        fetched.append(list(keys))
        return {k: f"v{clock.now}".encode() for k in keys}

    assert cache.get_many([("t", "a"), ("t", "b")], fetch) == {
        ("t", "a"): b"v0.0",
        ("t", "b"): b"v0.0",
    }
    clock.now = 9.0
    assert cache.get_many([("t", "a")], fetch) == {("t", "a"): b"v0.0"}
    clock.now = 10.0  # expired: a revocation written since is seen now
    assert cache.get_many([("t", "a")], fetch) == {("t", "a"): b"v10.0"}
    cache.get_many([("t", "c")], fetch)
    assert len(cache) == 2
    assert fetched == [[("t", "a"), ("t", "b")], [("t", "a")], [("t", "c")]]
    cache.get_many([("t", "b")], fetch)  # evicted as least recently used
    assert fetched[-1] == [("t", "b")]
