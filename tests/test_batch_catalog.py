"""The catalog side input: JSONL and Parquet give the same snapshot; bad catalogs fail loudly."""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.utils.shared import Shared

from schemas import CatalogDocument
from tests.batch_run import SAMPLES, input_lines
from transforms.catalog.side_input import ReadCatalog, SharedCatalogs, parse_catalog_row, snapshot

ROWS = [json.loads(line) for line in input_lines(SAMPLES / "catalog.jsonl")]
EXPECTED = snapshot(CatalogDocument.model_validate(r) for r in ROWS)


def test_jsonl_and_parquet_catalogs_give_one_snapshot(tmp_path: Path) -> None:
    parquet = tmp_path / "catalog.parquet"
    pq.write_table(pa.Table.from_struct_array(pa.array(ROWS)), parquet)
    with test_pipeline.TestPipeline(runner="FnApiRunner") as p:
        from_jsonl = p | "Jsonl" >> ReadCatalog(str(SAMPLES / "catalog.jsonl"), "jsonl")
        from_parquet = p | "Parquet" >> ReadCatalog(str(parquet), "parquet")
        assert_that(from_jsonl, equal_to([EXPECTED]), label="jsonl")
        assert_that(from_parquet, equal_to([EXPECTED]), label="parquet")


def test_snapshot_is_order_independent_and_fingerprinted() -> None:
    docs = [CatalogDocument.model_validate(r) for r in ROWS]
    assert snapshot(reversed(docs)) == EXPECTED
    assert len(EXPECTED) == len(EXPECTED.documents) == len(docs)
    changed = [docs[0].model_copy(update={"deleted": not docs[0].deleted}), *docs[1:]]
    assert snapshot(changed).fingerprint != EXPECTED.fingerprint


def test_a_worker_loads_a_snapshot_once_for_all_its_readers() -> None:
    handle = Shared()
    reader, other_thread = SharedCatalogs(handle), SharedCatalogs(handle)
    first = reader.get(EXPECTED)
    assert reader.get(EXPECTED) is first and other_thread.get(EXPECTED) is first
    smaller = snapshot(EXPECTED.documents[1:])
    loaded = reader.get(smaller)
    assert loaded is not first and len(loaded.catalog) == len(ROWS) - 1
    assert other_thread.get(smaller) is loaded
    assert SharedCatalogs(Shared()).get(smaller) is not loaded  # another pipeline step


def test_bad_catalog_rows_and_duplicates_fail_with_the_file_name() -> None:
    with pytest.raises(ValueError, match=r"catalog cat\.jsonl: bad document row \(document_id"):
        parse_catalog_row("cat.jsonl", json.dumps({"tenant_id": "acme"}).encode())
    with pytest.raises(ValueError, match="twice"):
        snapshot([*EXPECTED.documents, EXPECTED.documents[0]])
