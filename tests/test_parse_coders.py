"""What the parse step's grouping moves between workers goes through an explicit coder."""

from pathlib import Path
from typing import Any

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.portability import common_urns
from apache_beam.runners import pipeline_context
from hypothesis import given
from hypothesis import strategies as st

from packer.parsing.request_records import Entry
from pipelines.batch import build
from pipelines.options.jobs import resolve
from tests.batch_run import SAMPLES, flags
from transforms.parse import EntryCoder, ParseRequests

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


PER_BUNDLE_SHUFFLES = (
    "WriteImpl/GroupByKey",
    "CombinePerKey/GroupByKey",
    "ReshufflePerKey/GroupByKey",
)
"""Shuffles that move one element per written bundle (file results), per key (combiner
accumulators) or per input file or file piece: the pickling fallback costs them nothing."""


def _shuffle_coders(components: Any) -> dict[str, beam.coders.Coder]:
    """Each GroupByKey of a pipeline, by name, with the coder of the pairs it shuffles."""
    context = pipeline_context.PipelineContext(components)
    return {
        t.unique_name: context.coders.get_by_id(components.pcollections[pc].coder_id)
        for t in components.transforms.values()
        if t.spec.urn == common_urns.primitives.GROUP_BY_KEY.urn
        for pc in t.inputs.values()
    }


def _pickles(coder: beam.coders.Coder) -> bool:
    """Whether `coder` falls back to pickling for some component (FastPrimitivesCoder does)."""
    if isinstance(coder, beam.coders.FastPrimitivesCoder | beam.coders.PickleCoder):
        return True
    return any(_pickles(c) for c in coder._get_component_coders())


def test_a_request_crosses_a_stage_of_the_batch_job_once_with_a_typed_coder(
    tmp_path: Path,
) -> None:
    """Per-record data is shuffled once (records grouped by request_id, `EntryCoder`); the
    pack step and every write are fused behind it, so requests, prompts and audit rows
    never go through the pickling fallback. A new shuffle of per-record elements whose
    coder pickles fails here."""
    options = PipelineOptions(flags(SAMPLES / "requests.jsonl", tmp_path / "out"))
    p = beam.Pipeline(options=options)
    build(p, resolve(options))
    shuffles = _shuffle_coders(p.to_runner_api().components)
    grouped = shuffles.pop("Parse/GroupByRequestId")
    assert not _pickles(grouped)
    assert isinstance(grouped._get_component_coders()[1], EntryCoder)
    pickling = sorted(name for name, coder in shuffles.items() if _pickles(coder))
    assert pickling, (
        "the per-bundle shuffles were expected to pickle: is this test still reading coders?"
    )
    assert [n for n in pickling if not n.endswith(PER_BUNDLE_SHUFFLES)] == []
