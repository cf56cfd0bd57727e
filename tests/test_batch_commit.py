"""Batch outputs are committed whole: a failed run leaves the earlier run as it was and says
where its partial files are; a row no sink can encode is one dead letter, not a failed run."""

import json
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that, equal_to

from packer import Catalog, PackerRuntime, pack_request
from pipelines.batch import RunFailed, run
from schemas import ManifestRow, PackingConfig
from tests.batch_run import SAMPLES, flags, read_outputs
from tests.factories import candidate, document, request
from transforms.sink_rows import EncodableRows, arrow_encoder, json_encoder


def test_a_finished_run_leaves_no_staging_behind(tmp_path: Path) -> None:
    out = tmp_path / "out"
    finished = run(flags(SAMPLES / "requests.jsonl", out))
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["dead_letters", "exclusion_counts", "exclusions", "manifests", "prompts", "runs"]
    )
    assert not list(out.glob("*/beam-temp-*"))
    assert len(read_outputs(out).prompts) == finished.summary.prompts_out


def test_a_failed_run_commits_nothing_and_names_what_it_left(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(flags(SAMPLES / "requests.jsonl", out))
    before = read_outputs(out)
    # The catalog is trusted: a bad row a request cites fails the run where the join reads it.
    broken = tmp_path / "catalog.jsonl"
    rows = (SAMPLES / "catalog.jsonl").read_text().splitlines()
    broken.write_text("\n".join([rows[0].replace('"deleted": false', '"deleted": 7'), *rows[1:]]))
    argv = [f"--catalog={broken}", "--catalog_mode=join", "--overwrite"]
    with pytest.raises(RunFailed, match=r"nothing was committed under .*\.tmp-") as failed:
        run(flags(SAMPLES / "requests.jsonl", out, *argv))
    staging = next(out.glob(".tmp-*"))
    assert str(staging) in str(failed.value)
    assert read_outputs(out) == before  # the earlier run is untouched


def _manifest(request_id: str) -> ManifestRow:
    result = pack_request(
        request(candidate("e1"), request_id=request_id),
        Catalog([document("d1")]),
        PackingConfig(),
        PackerRuntime.load(),
    )
    return result.manifest


def test_a_row_no_sink_can_encode_is_a_write_dead_letter() -> None:
    good = _manifest("good")
    too_big = _manifest("too-big").model_copy(update={"candidates_in": 2**64})
    surrogate = _manifest("surrogate").model_copy(update={"model": "\ud800"})
    for sink, encoder, bad in (
        ("manifests", arrow_encoder(ManifestRow), [too_big, surrogate]),
        ("dead_letters", json_encoder, [surrogate]),
    ):
        with test_pipeline.TestPipeline(runner="FnApiRunner") as p:
            checked = p | beam.Create([good, *bad]) | EncodableRows(sink, encoder)
            ids = checked.rows | "Ids" >> beam.Map(lambda row: row.request_id)
            letters = checked.dead_letters | "Letters" >> beam.Map(
                lambda d: (d.stage, d.request_id, d.source, json.loads(d.payload)["request_id"])
            )
            assert_that(ids, equal_to(["good"]), label="rows")
            expected = [("write", b.request_id, sink, b.request_id) for b in bad]
            assert_that(letters, equal_to(expected), label="letters")
