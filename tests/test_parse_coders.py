"""What the parse step's grouping moves between workers goes through an explicit coder."""

import apache_beam as beam
from hypothesis import given
from hypothesis import strategies as st

from transforms.parse import EntryCoder, ParseRequests
from transforms.request_records import Entry

ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)


@given(st.sampled_from(["nested", "flat"]), ANY_TEXT, ANY_TEXT, ANY_TEXT)
def test_an_entry_survives_its_coder_byte_for_byte(
    shape: str, sha256: str, source: str, payload: str
) -> None:
    """Any strings, empty ones, lone surrogates (a source name that was not UTF-8)."""
    entry = Entry(shape, sha256, source, payload)  # type: ignore[arg-type]
    coder = EntryCoder()
    encoded = coder.encode(entry)
    assert coder.decode(encoded) == entry
    assert coder.encode(coder.decode(encoded)) == encoded


def test_the_grouping_by_request_id_uses_the_entry_coder() -> None:
    """Not the pickling fallback: the grouped pair's coder names EntryCoder."""
    p = beam.Pipeline()
    _ = p | beam.Create([("f", b'{"request_id": "a"}')]) | ParseRequests()
    proto = p.to_runner_api()
    components = proto.components
    [group] = [
        t for t in components.transforms.values() if t.unique_name.endswith("GroupByRequestId")
    ]
    [grouped] = group.inputs.values()
    pair = components.coders[components.pcollections[grouped].coder_id]
    names = [components.coders[c].spec.payload for c in pair.component_coder_ids]
    assert any(b"EntryCoder" in name for name in names)
