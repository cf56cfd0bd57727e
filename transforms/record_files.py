"""The one reader of record files: requests, catalogs, prompts and answers, JSONL or Parquet.

`ReadRecords` for pipelines and `file_records` for a worker re-reading a file
(the refreshed catalog, `evpack catalog load`) give the same records: each is
`(source, payload bytes)`, the source being the file's path as matched.
- JSONL: each line as bytes, so a line that is not UTF-8 is refused by its
  decoder with its byte offset rather than failing the read; `\n` and `\r\n`
  both end a line; blank lines carry nothing and are skipped. A byte-order
  mark is left to the decoder (`transforms.strict_json.decode_text` drops one).
- Parquet: each row as a JSON object (`row_payload`), strings that are not
  UTF-8 kept raw (`parquet_records`), values JSON has no type for written as
  JSON would (`json_types`).
Compressed files (`.gz`, `.bz2`, ...) are read by their extension. A file is
read in pieces (`pieces`: Parquet row groups, byte ranges of plain JSONL), so a
large file is still read in parallel; a compressed one is read whole.

No file can fail a run or lose records without a word: a file that cannot be
read, or stops being readable half way (not Parquet, truncated, a corrupt page,
a `.gz` that is not gzip or is cut short), gives its records up to there and
then one `Unreadable` record naming the file and the error, which its decoder
refuses like any bad record.

Rejected: one reader per kind of file. Requests, catalog side input, joined
catalog and refreshed catalog each had theirs, and they differed on BOMs,
invalid UTF-8 and Parquet strings. Rejected: Beam's file readers. They fail the
whole job on a file they cannot read, their decompressor ends a truncated
`.gz` early without an error, and their text reader takes time quadratic in
the length of a line (20 s for one line of 20 MB, an hour for 300 MB) where
Python's `readline` is linear.
"""

import bz2
import gzip
import json
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from transforms.names import FileFormat
from transforms.strict_json import Unreadable

Record = tuple[str, bytes | Unreadable]
"""One record: its source file and its payload bytes (or why the file reads no further)."""


def is_blank(record: Record) -> bool:
    """Whether a JSONL line holds nothing but whitespace (skipped by both readers)."""
    payload = record[1]
    return isinstance(payload, bytes) and not payload.strip()


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _json_value(value: Any) -> Any:
    """A value JSON has no type for: bytes as the text they hold (invalid UTF-8 kept raw)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)


def row_payload(row: dict[str, Any]) -> bytes:
    """A Parquet row as JSON bytes.

    A null column or struct field is an absent field: Parquet has one schema per
    file, so a field that only some records carry is null in the others. Bytes
    that are not UTF-8 stay raw in the payload, for its decoder to refuse.
    """
    text = json.dumps(_drop_nulls(row), ensure_ascii=False, default=_json_value)
    return text.encode("utf-8", "surrogateescape")


_LISTS = (pa.types.is_list, pa.types.is_large_list, pa.types.is_fixed_size_list)


def json_types(value_type: pa.DataType, strings: pa.DataType | None = None) -> pa.DataType:
    """The Arrow type `value_type` is read as, so each value comes out as JSON would hold it.

    Timestamps, dates, times and durations as their ISO text (any unit and range:
    Python's datetime refuses nanoseconds and years past 9999, and would fail
    the whole batch); decimals and half floats as float64; dictionary-encoded
    columns as their values; binary as the text it holds. `strings`, when
    given, is the type string columns are read as (binary, to keep invalid
    UTF-8 raw).
    """
    if pa.types.is_dictionary(value_type):
        return json_types(value_type.value_type, strings)
    if pa.types.is_temporal(value_type):
        return pa.string()
    if pa.types.is_decimal(value_type) or pa.types.is_float16(value_type):
        return pa.float64()
    if strings is not None and (
        pa.types.is_string(value_type) or pa.types.is_large_string(value_type)
    ):
        return strings
    if pa.types.is_struct(value_type):
        fields = [value_type.field(i) for i in range(value_type.num_fields)]
        return pa.struct([f.with_type(json_types(f.type, strings)) for f in fields])
    if pa.types.is_map(value_type):
        key, item = value_type.key_field, value_type.item_field
        return pa.map_(
            key.with_type(json_types(key.type, strings)),
            item.with_type(json_types(item.type, strings)),
        )
    if any(is_list(value_type) for is_list in _LISTS):
        return pa.list_(
            value_type.value_field.with_type(json_types(value_type.value_type, strings))
        )
    return value_type


def _rows(table: pa.Table, strings: pa.DataType | None = None) -> list[dict[str, Any]]:
    schema = pa.schema([f.with_type(json_types(f.type, strings)) for f in table.schema])
    return table.cast(schema).to_pylist()


def parquet_records(source: str, table: pa.Table) -> Iterator[Record]:
    """The rows of one Parquet batch as JSON payloads, whatever their strings hold.

    Parquet does not check that a string column holds UTF-8; a row that does
    not keeps its raw bytes in its payload, so `decode` refuses that row (with
    the byte offset) and the rows beside it are read. Beam's row reader would
    fail the whole read there instead.
    """
    try:
        rows = _rows(table)
    except UnicodeDecodeError:
        rows = []
        for i in range(table.num_rows):
            one = table.slice(i, 1)
            try:
                rows += _rows(one)
            except UnicodeDecodeError:
                rows += _rows(one, pa.binary())
    for row in rows:
        yield source, row_payload(row)


def matching_files(pattern: str) -> list[str]:
    """The files matching `pattern`, local or gs://, sorted (none is an empty list)."""
    return sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)


def read_parquet(
    path: str, columns: list[str] | None = None, schema: pa.Schema | None = None
) -> pa.Table:
    """A whole (small) Parquet file, local or gs://, through Beam's filesystems.

    Not `pq.read_table(path)`: for a gs:// path pyarrow uses its own Cloud Storage
    client, which ignores the endpoint and credentials Beam's client uses
    (`STORAGE_EMULATOR_HOST`), and waits on the metadata server when it has none.
    """
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        return pq.read_table(handle, columns=columns, schema=schema)


def some_files(pattern: str) -> list[str]:
    """The files matching `pattern`; raises ValueError when there is none (a wrong path)."""
    paths = matching_files(pattern)
    if not paths:
        raise ValueError(f"{pattern!r} matches no file")
    return paths


_DECOMPRESSORS: dict[str, Callable[[IO[bytes]], IO[bytes]]] = {
    ".gz": lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"),
    ".bz2": lambda raw: bz2.BZ2File(raw, mode="rb"),
}
"""Python's own decompressors, which raise on a truncated file; other suffixes go to Beam's."""


def is_compressed(path: str) -> bool:
    """Whether Beam reads `path` decompressed (its extension names a compression)."""
    return CompressionTypes.detect_compression_type(path) != CompressionTypes.UNCOMPRESSED


SPLIT_BYTES = 64 << 20
"""A plain JSONL file is read in ranges of this many bytes, in parallel."""

Piece = tuple[str, int]
"""Part of a file read on its own: a Parquet row group, or the start of a JSONL byte range."""


def _decompressed_lines(path: str) -> Iterator[bytes]:
    suffix = next((s for s in _DECOMPRESSORS if path.endswith(s)), None)
    if suffix is None:
        with FileSystems.open(path) as handle:
            yield from iter(handle.readline, b"")
        return
    raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
    with raw, _DECOMPRESSORS[suffix](raw) as handle:
        yield from iter(handle.readline, b"")


def _lines(path: str, start: int, end: int | None) -> Iterator[bytes]:
    """The lines that begin in bytes [start, end) of a plain file (a compressed one: all).

    A line that began before `start` belongs to the range before, which reads
    it past its own end.
    """
    if is_compressed(path):
        yield from _decompressed_lines(path)
        return
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        if start:
            handle.seek(start - 1)
            handle.readline()
        while end is None or handle.tell() < end:
            line = handle.readline()
            if not line:
                return
            yield line


def _unreadable(path: str, read: int, where: str, err: Exception) -> Record:
    after = f" after {read} records" if read else ""
    return path, Unreadable(f"{path} cannot be read{where}{after}: {type(err).__name__}: {err}")


def jsonl_records(path: str, start: int = 0, end: int | None = None) -> Iterator[Record]:
    """The lines of a JSONL file (or of one byte range of it), blank ones skipped; an
    `Unreadable` where reading fails."""
    read = 0
    try:
        for line in _lines(path, start, end):
            record = (path, line.removesuffix(b"\n").removesuffix(b"\r"))
            if not is_blank(record):
                read += 1
                yield record
    except Exception as err:  # any failure to read is this file's dead letter
        where = f" (bytes from {start})" if start else ""
        yield _unreadable(path, read, where, err)


def pieces(path: str, file_format: FileFormat) -> Iterator[Piece | Record]:
    """The pieces of a file to read apart, or an `Unreadable` record when it cannot be opened.

    Parquet: its row groups. Plain JSONL: byte ranges of `SPLIT_BYTES`.
    Compressed JSONL: the whole file, as a stream cannot be entered half way.
    """
    try:
        if file_format == "parquet":
            with FileSystems.open(path) as handle:
                starts: Iterable[int] = range(pq.ParquetFile(handle).num_row_groups)
        elif is_compressed(path):
            starts = [0]
        else:
            size = FileSystems.match([path])[0].metadata_list[0].size_in_bytes
            starts = range(0, size, SPLIT_BYTES)
    except Exception as err:  # not Parquet, truncated, unreachable: this file's dead letter
        yield _unreadable(path, 0, " as Parquet" if file_format == "parquet" else "", err)
        return
    for start in starts:
        yield path, start


def row_group_records(path: str, index: int) -> Iterator[Record]:
    """The rows of one row group; an `Unreadable` where reading fails (a corrupt page)."""
    read = 0
    try:
        with FileSystems.open(path) as handle:
            group = pq.ParquetFile(handle).read_row_group(index)
        for record in parquet_records(path, group):
            read += 1
            yield record
    except Exception as err:  # any failure to read or convert is this row group's dead letter
        yield _unreadable(path, read, f" (row group {index})", err)


def piece_records(element: Piece | Record, file_format: FileFormat) -> Iterator[Record]:
    """The records of one piece (an `Unreadable` record passes through)."""
    path, start = element
    if not isinstance(start, int):
        yield path, start
    elif file_format == "parquet":
        yield from row_group_records(path, start)
    else:
        yield from jsonl_records(path, start, start + SPLIT_BYTES)


def file_records(pattern: str, file_format: FileFormat) -> Iterator[Record]:
    """The records of the files matching `pattern`, in file order, read as a stream.

    A JSONL file line by line, a Parquet file row group by row group: a worker
    never holds a whole file. A pattern matching no file raises ValueError.
    """
    for path in some_files(pattern):
        for piece in pieces(path, file_format):
            yield from piece_records(piece, file_format)


class ReadRecords(beam.PTransform[beam.pvalue.PBegin, beam.PCollection[tuple[str, Any]]]):
    """`(source, payload bytes)` for every record of a JSONL or Parquet file or glob.

    The payload is declared `Any` to Beam, not `bytes | Unreadable`: every consumer
    takes the payload to a decoder that refuses an `Unreadable`, and those
    declared on `bytes` still type-check.
    """

    def __init__(self, pattern: str, file_format: FileFormat) -> None:
        super().__init__()
        self._pattern = pattern
        self._format = file_format

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[tuple[str, Any]]:
        return (
            pbegin
            | "Pattern" >> beam.Create([self._pattern])
            | "Match" >> beam.FlatMap(some_files)
            | "SpreadFiles" >> beam.Reshuffle()
            | "Pieces" >> beam.FlatMap(pieces, self._format).with_output_types(Any)
            | "SpreadPieces" >> beam.Reshuffle()
            | "Read" >> beam.FlatMap(piece_records, self._format).with_output_types(Any)
        )
