"""The one record reader: the pipeline transform and the worker-side iterator read alike."""

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that, equal_to

from tests.factories import document
from transforms.catalog_io import ReadCatalogDocuments, catalog_documents
from transforms.names import FileFormat
from transforms.record_files import ReadRecords, file_records

JSONL = (
    b'\xef\xbb\xbf{"n": 1}\r\n'  # a byte-order mark is the decoder's to drop
    b"\n"
    b"   \t\r\n"
    b'{"n": 2, "text": "caf\xc3\xa9"}\n'
    b'{"n": 3, "bad": "\xff"}\n'  # not UTF-8: kept raw for its decoder to refuse
    b'{"n": 4}'  # no newline at the end
)
EXPECTED_JSONL = [
    b'\xef\xbb\xbf{"n": 1}',
    b'{"n": 2, "text": "caf\xc3\xa9"}',
    b'{"n": 3, "bad": "\xff"}',
    b'{"n": 4}',
]


def _files(tmp_path: Path) -> dict[str, tuple[FileFormat, list[tuple[str, bytes]]]]:
    """A glob per kind of file, its format, and the records both readers must give."""
    plain = tmp_path / "plain" / "a.jsonl"
    zipped = tmp_path / "zipped" / "a.jsonl.gz"
    parquet = tmp_path / "parquet" / "a.parquet"
    for path in (plain, zipped, parquet):
        path.parent.mkdir()
    plain.write_bytes(JSONL)
    zipped.write_bytes(gzip.compress(JSONL))
    pq.write_table(pa.table({"n": [1, 2], "note": ["x", None]}), parquet)
    rows = [b'{"n": 1, "note": "x"}', b'{"n": 2}']  # a null column is an absent field
    return {
        "plain": ("jsonl", [(str(plain), line) for line in EXPECTED_JSONL]),
        "zipped": ("jsonl", [(str(zipped), line) for line in EXPECTED_JSONL]),
        "parquet": ("parquet", [(str(parquet), row) for row in rows]),
    }


@pytest.mark.parametrize("kind", ["plain", "zipped", "parquet"])
def test_the_transform_and_the_iterator_give_the_same_records(tmp_path: Path, kind: str) -> None:
    file_format, expected = _files(tmp_path)[kind]
    pattern = str(tmp_path / kind / "*")
    assert list(file_records(pattern, file_format)) == expected
    with test_pipeline.TestPipeline(runner="FnApiRunner") as p:
        assert_that(p | ReadRecords(pattern, file_format), equal_to(expected))


def test_the_iterator_reads_files_in_order_and_refuses_an_empty_glob(tmp_path: Path) -> None:
    (tmp_path / "b.jsonl").write_bytes(b'{"n": 2}\n')
    (tmp_path / "a.jsonl").write_bytes(b'{"n": 1}\n')
    assert [p for _, p in file_records(str(tmp_path / "*.jsonl"), "jsonl")] == [
        b'{"n": 1}',
        b'{"n": 2}',
    ]
    with pytest.raises(ValueError, match="matches no file"):
        list(file_records(str(tmp_path / "*.parquet"), "parquet"))


def test_a_catalog_reads_alike_in_the_pipeline_and_on_a_worker(tmp_path: Path) -> None:
    docs = [document("d1"), document("d2")]
    lines = [d.model_dump_json().encode() for d in docs]
    (tmp_path / "catalog.jsonl").write_bytes(b"\xef\xbb\xbf" + lines[0] + b"\r\n\n" + lines[1])
    pattern = str(tmp_path / "catalog.jsonl")
    assert list(catalog_documents(pattern, "jsonl")) == docs
    with test_pipeline.TestPipeline(runner="FnApiRunner") as p:
        read = p | ReadCatalogDocuments(pattern, "jsonl")
        assert_that(read, equal_to(docs))
    rows = [json.loads(line) for line in lines]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "catalog.parquet")
    parquet = str(tmp_path / "catalog.parquet")
    assert list(catalog_documents(parquet, "parquet")) == docs
