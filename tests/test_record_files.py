"""The one record reader: the pipeline transform and the worker-side iterator read alike."""

import bz2
import gzip
import hashlib
import json
import lzma
import os
import struct
import tempfile
import tracemalloc
import zlib
from decimal import Decimal
from pathlib import Path
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that, equal_to
from hypothesis import given
from hypothesis import strategies as st

from packer.parsing.names import FileFormat
from packer.parsing.request_records import decode
from packer.parsing.strict_json import Unreadable
from schemas import DeadLetter
from tests.factories import document
from transforms.bounded_lines import HEAD_BYTES, READ_CHUNK
from transforms.catalog.side_input import ReadCatalogDocuments, catalog_documents
from transforms.parquet_rows import parquet_records
from transforms.record_files import (
    ReadRecords,
    file_records,
    jsonl_records,
    matching_files,
    some_files,
)

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


def _unreadable_files(tmp_path: Path) -> dict[str, tuple[FileFormat, int]]:
    """Files that cannot be read to their end, their format, and how many records they give."""
    table = pa.table({"n": list(range(100))})
    pq.write_table(table, tmp_path / "good.parquet")
    data = (tmp_path / "good.parquet").read_bytes()
    (tmp_path / "truncated.parquet").write_bytes(data[: len(data) // 2])
    (tmp_path / "not-parquet.parquet").write_bytes(b'{"n": 1}\n')
    (tmp_path / "empty.parquet").write_bytes(b"")
    lines = b"".join(b'{"n": %d}\n' % i for i in range(5000))
    packed = gzip.compress(lines)
    (tmp_path / "truncated.jsonl.gz").write_bytes(packed[: len(packed) // 2])
    (tmp_path / "not-gzip.jsonl.gz").write_bytes(b'{"n": 1}\n')
    return {
        "truncated.parquet": ("parquet", 0),
        "not-parquet.parquet": ("parquet", 0),
        "empty.parquet": ("parquet", 0),
        "truncated.jsonl.gz": ("jsonl", -1),  # some lines, then the error
        "not-gzip.jsonl.gz": ("jsonl", 0),
    }


def test_a_file_that_cannot_be_read_to_its_end_ends_in_one_unreadable_record(
    tmp_path: Path,
) -> None:
    """Not a failed job and not records missing without a word: one record names the file."""
    for name, (file_format, count) in _unreadable_files(tmp_path).items():
        path = str(tmp_path / name)
        records = list(file_records(path, file_format))
        *read, (source, last) = records
        assert isinstance(last, Unreadable) and source == path, name
        assert last.reason.startswith(f"{path} cannot be read"), last.reason
        assert all(isinstance(p, bytes) for _, p in read) and (count == -1 or len(read) == count)
        if count == -1:
            assert 0 < len(read) < 5000 and f"after {len(read)} records" in last.reason
        letter = decode(source, last, "auto", 1 << 20)
        assert isinstance(letter, DeadLetter) and letter.stage == "parse"
        assert letter.error == last.reason and letter.source == path
        with test_pipeline.TestPipeline(runner="FnApiRunner") as p:
            reasons = (
                p
                | ReadRecords(path, file_format)
                | beam.Filter(lambda r: isinstance(r[1], Unreadable))
                | beam.Map(lambda r: r[1].reason)
            )
            assert_that(reasons, equal_to([last.reason]))


def test_parquet_values_come_out_as_json_would_hold_them() -> None:
    """Bytes as their text, every time unit and range as ISO text, decimals as numbers."""
    columns = {
        "request_id": pa.array([b"q1"], pa.binary()),
        "bad": pa.array([b"\xffq"], pa.binary()),
        "ns": pa.array([1_782_864_000_123_456_789], pa.timestamp("ns")),
        "far": pa.array([253_402_300_800], pa.timestamp("s")),
        "zoned": pa.array([1_782_864_000], pa.timestamp("s", tz="America/New_York")),
        "day": pa.array([20_635], pa.date32()),
        "price": pa.array([Decimal("0.125")], pa.decimal128(10, 3)),
        "half": pa.array([0.5], pa.float16()),
        "word": pa.array(["x"]).dictionary_encode(),
        "long": pa.array(["y"], pa.large_string()),
        "pairs": pa.array([[("k", "v")]], pa.map_(pa.string(), pa.string())),
        "spans": pa.array(
            [[{"start": 1, "at": 0}]],
            pa.list_(pa.struct([("start", pa.int8()), ("at", pa.time32("s"))])),
        ),
    }
    [(_, payload)] = parquet_records("in.parquet", pa.table(columns))
    assert payload.startswith(b'{"request_id": "q1", "bad": "\xffq", ')
    assert json.loads(payload.replace(b"\xff", b"")) == {
        "request_id": "q1",
        "bad": "q",
        "ns": "2026-07-01 00:00:00.123456789",
        "far": "10000-01-01 00:00:00",
        "zoned": "2026-06-30 20:00:00-0400",
        "day": "2026-07-01",
        "price": 0.125,
        "half": 0.5,
        "word": "x",
        "long": "y",
        "pairs": [["k", "v"]],
        "spans": [{"start": 1, "at": "00:00:00"}],
    }


@given(
    st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")), max_size=20),
    st.sampled_from([b"\n", b"\r\n"]),
    st.booleans(),
    st.integers(1, 64),
)
def test_byte_ranges_read_each_line_once(
    lines: list[bytes], end: bytes, last_newline: bool, split: int
) -> None:
    """However a file is cut into ranges, each line is read once, by the range it begins in."""
    data = end.join(lines) + (end if last_newline and lines else b"")
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as handle:
        handle.write(data)
        handle.flush()
        whole = list(jsonl_records(handle.name))
        ranges = [
            record
            for start in range(0, len(data), split)
            for record in jsonl_records(handle.name, start, start + split)
        ]
    assert ranges == whole
    ends = [end] * len(lines)
    if lines and not last_newline:
        ends[-1] = b""
    # A line's own trailing \r goes with its \n: the reader cannot tell it from a CRLF.
    expected = [
        (line + e).removesuffix(b"\n").removesuffix(b"\r")
        for line, e in zip(lines, ends, strict=True)
    ]
    assert [p for _, p in whole] == [e for e in expected if e.strip()]


def test_a_line_of_64_mb_is_read_whole(tmp_path: Path) -> None:
    """Whole, for its decoder to refuse for its size (Beam's text reader took minutes on
    such a line: its time grows with the square of the line's length)."""
    path = tmp_path / "long.jsonl"
    path.write_bytes(b'{"q": "' + b"q" * (64 << 20) + b'"}\n{"n": 1}\n')
    records = list(file_records(str(path), "jsonl"))
    assert [len(p) for _, p in records] == [(64 << 20) + 9, 8]


def test_a_map_key_that_is_not_utf8_refuses_its_row_only() -> None:
    offsets = pa.py_buffer(struct.pack("<2i", 0, 2))
    keys = pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(b"\xff\xfe")])
    pairs = pa.MapArray.from_arrays(pa.array([0, 1, 1], pa.int32()), keys, pa.array(["v"]))
    records = list(
        parquet_records("in.parquet", pa.table({"request_id": ["q1", "q2"], "m": pairs}))
    )
    letters = [decode(s, p, "auto", 1 << 20) for s, p in records]
    assert [d.error for d in letters if isinstance(d, DeadLetter)] == [
        "invalid UTF-8 at byte 29: invalid start byte",
        "record has neither candidates (nested shape) nor evidence_id (flat shape)",
    ]


def _compressed(kind: str, data: bytes) -> bytes:
    """`data` as Beam would write it for each compression it names by extension."""
    if kind == "gz":
        return gzip.compress(data)
    if kind == "bz2":
        return bz2.compress(data)
    if kind == "xz":
        return lzma.compress(data)
    if kind == "zst":
        return zstandard.ZstdCompressor().compress(data)
    return zlib.compress(data)


@pytest.mark.parametrize("kind", ["gz", "bz2", "xz", "zst", "deflate", "plain"])
def test_a_line_over_the_limit_is_cut_off_while_read(tmp_path: Path, kind: str) -> None:
    """Its first bytes, its size and its hash stand for it; the lines after it are read."""
    long = b'{"q": "' + b"a" * (3 << 20) + b'"}'
    data = b'{"n": 1}\n' + long + b"\r\n" + b'{"n": 2}'
    path = tmp_path / ("in.jsonl" if kind == "plain" else f"in.jsonl.{kind}")
    # Compressed: as two streams one after the other (appended files), read as one.
    cut = len(data) // 2
    parts = (
        [data]
        if kind == "plain"
        else [_compressed(kind, data[:cut]), _compressed(kind, data[cut:])]
    )
    path.write_bytes(b"".join(parts))
    records = list(file_records(str(path), "jsonl", limit=1 << 20))
    assert [p for _, p in records][0::2] == [b'{"n": 1}', b'{"n": 2}']
    (source, cut) = records[1]
    assert isinstance(cut, Unreadable) and source == str(path)
    assert cut.head == long[:HEAD_BYTES]
    assert cut.reason.startswith(f"record of {len(long)} bytes (cut off while read")
    assert cut.reason.endswith(f"exceeds --max_record_bytes={1 << 20}")
    assert hashlib.sha256(long + b"\r\n").hexdigest() in cut.reason
    letter = decode(source, cut, "auto", 1 << 20)
    assert isinstance(letter, DeadLetter) and letter.payload == long[:HEAD_BYTES].decode()


def test_a_compressed_bomb_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """A 100 kB `.gz` of one 100 MB line: what the reader allocates stays near its chunk size,
    not the line's (it took ten times the line when lines were read whole)."""
    path = tmp_path / "bomb.jsonl.gz"
    with gzip.open(path, "wb", compresslevel=9) as handle:
        for _ in range(100):
            handle.write(b"a" * (1 << 20))
        handle.write(b'\n{"n": 1}\n')
    assert path.stat().st_size < 200_000
    tracemalloc.start()
    try:
        records = list(file_records(str(path), "jsonl", limit=1 << 20))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [type(p) for _, p in records] == [Unreadable, bytes]
    assert f"record of {100 << 20} bytes" in records[0][1].reason
    assert peak < 8 * READ_CHUNK, peak


def test_entries_a_glob_matches_that_are_no_file_are_dead_letters(tmp_path: Path) -> None:
    """Beam's listing drops a dangling link and a link to a folder without a word."""
    folder = tmp_path / "in"
    (folder / "sub.jsonl").mkdir(parents=True)
    (folder / "good.jsonl").write_bytes(b'{"n": 1}\n')
    (folder / "dangling.jsonl").symlink_to(tmp_path / "gone.jsonl")
    (folder / "linked.jsonl").symlink_to(tmp_path)
    os.mkfifo(folder / "pipe.jsonl")
    pattern = str(folder / "*.jsonl")
    why = {
        "dangling.jsonl": f"a symbolic link to {tmp_path / 'gone.jsonl'}, which does not exist",
        "linked.jsonl": f"a symbolic link to the folder {tmp_path}, whose files are not read",
        "pipe.jsonl": "not a regular file",
        "sub.jsonl": "a folder; name its files with a glob such as",
    }
    expected = sorted(
        [(str(folder / "good.jsonl"), b'{"n": 1}')]
        + [(str(folder / n), f"{folder / n} cannot be read: {r}") for n, r in why.items()]
    )

    def shown(record: tuple[str, Any]) -> tuple[str, Any]:
        source, payload = record
        if isinstance(payload, Unreadable):
            return source, payload.reason[: len(dict(expected)[source])]
        return source, payload

    assert [shown(r) for r in file_records(pattern, "jsonl")] == expected
    with test_pipeline.TestPipeline(runner="FnApiRunner") as p:
        assert_that(p | ReadRecords(pattern, "jsonl") | beam.Map(shown), equal_to(expected))


def test_links_that_loop_under_a_recursive_glob_are_named_not_followed(tmp_path: Path) -> None:
    """Two links to their own folder: following them would list 2^depth paths."""
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a.jsonl").write_bytes(b'{"n": 1}\n')
    (folder / "up").symlink_to(".")
    (folder / "sub" / "back").symlink_to("..")
    records = list(file_records(str(folder / "**"), "jsonl"))
    assert [s for s, p in records if isinstance(p, bytes)] == [str(folder / "sub" / "a.jsonl")]
    named = {s: p.reason for s, p in records if isinstance(p, Unreadable)}
    assert sorted(named) == [str(folder / "sub" / "back"), str(folder / "up")]
    assert all("a symbolic link to the folder" in reason for reason in named.values())


def test_a_parquet_row_group_over_the_limit_per_row_is_not_read(tmp_path: Path) -> None:
    """A small zstd Parquet file of one 64 MB value: refused from its metadata, not loaded."""
    path = tmp_path / "bomb.parquet"
    pq.write_table(pa.table({"q": ["a" * (64 << 20)]}), path, compression="zstd")
    assert path.stat().st_size < 100_000
    tracemalloc.start()
    try:
        [(source, cut)] = list(file_records(str(path), "parquet", limit=1 << 20))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert source == str(path) and isinstance(cut, Unreadable)
    assert cut.reason.endswith(
        f"for 1 rows, more than --max_record_bytes={1 << 20} a row: not read"
    )
    assert peak < 8 * READ_CHUNK, peak
    read = [p for _, p in file_records(str(path), "parquet", limit=128 << 20)]
    assert [len(p) for p in read] == [(64 << 20) + len(b'{"q": ""}')]


def test_a_bare_glob_matches_in_the_working_folder_and_lists_no_deeper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--input '*.jsonl'` (Beam alone finds nothing for a glob without a folder); a
    dangling link beside it is named, one in a subfolder the glob does not reach is not."""
    (tmp_path / "a.jsonl").write_text('{"x": 1}\n')
    (tmp_path / "gone.jsonl").symlink_to(tmp_path / "nowhere")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "deep.jsonl").symlink_to(tmp_path / "nowhere")
    monkeypatch.chdir(tmp_path)
    assert matching_files("*.jsonl") == ["./a.jsonl"]
    assert some_files("*.jsonl") == ["./a.jsonl", "gone.jsonl"]
    assert some_files(f"{tmp_path}/*.jsonl") == [f"{tmp_path}/a.jsonl", f"{tmp_path}/gone.jsonl"]
    assert f"{tmp_path}/sub/deep.jsonl" in some_files(f"{tmp_path}/*/*.jsonl")
