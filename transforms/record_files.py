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
Compressed files (`.gz`, `.bz2`, `.xz`, `.zst`, `.deflate`) are read by their
extension, decompressed a buffer at a time. A file is read in pieces (`pieces`:
Parquet row groups, byte ranges of plain JSONL), so a large file is still read
in parallel; a compressed one is read whole.

Memory is bounded whatever a file holds: given `--max_record_bytes`, a JSONL
line is read at most that far; a longer one is read on a chunk at a time,
counted and hashed, never held, and comes out as an `Unreadable` keeping its
first `HEAD_BYTES`, its size and its SHA-256 (a 160 kB `.gz` of one 160 MB
line took 1.6 GB when lines were read whole). A Parquet row group, read
whole, is not read when its uncompressed size is over the limit per row.

No file can fail a run or lose records without a word: an entry the glob
matches that is no file (a dangling symbolic link, a link to a folder, a
folder, a pipe) is one `Unreadable` record naming it (Beam's listing drops the
first two silently); a file that cannot be read, or stops being readable half
way (not Parquet, truncated, a corrupt page, a `.gz` that is not gzip or is cut
short), gives its records up to there and then one `Unreadable` record naming
the file and the error, which its decoder refuses like any bad record.

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
import hashlib
import io
import json
import lzma
import os
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import zstandard
from apache_beam.io.filesystem import CompressionTypes, FileSystem
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from transforms.names import METRICS_NAMESPACE, FileFormat
from transforms.strict_json import Unreadable

_BYTES_READ = Metrics.counter(METRICS_NAMESPACE, "bytes_read")
"""JSONL bytes read, decompressed: what the run held, not what the files weigh."""

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


def matchable(pattern: str) -> str:
    """`pattern` as Beam's filesystems can match it: a bare local glob (`*.jsonl`) as
    `./*.jsonl`, for which Beam's local filesystem otherwise finds nothing."""
    if _is_local(pattern) and not os.path.dirname(pattern) and set("*?[") & set(pattern):
        return f"./{pattern}"
    return pattern


def matching_files(pattern: str) -> list[str]:
    """The files matching `pattern`, local or gs://, sorted (none is an empty list)."""
    return sorted(m.path for m in FileSystems.match([matchable(pattern)])[0].metadata_list)


def read_parquet(
    path: str, columns: list[str] | None = None, schema: pa.Schema | None = None
) -> pa.Table:
    """A whole (small) Parquet file, local or gs://, through Beam's filesystems.

    Not `pq.read_table(path)`: for a gs:// path pyarrow uses its own Cloud Storage
    client, which ignores the endpoint and credentials Beam's client uses
    (`STORAGE_EMULATOR_HOST`), and waits on the metadata server when it has none.
    The bytes are read whole and parsed from memory: parsing from the Python file
    object left pyarrow's I/O threads holding it, and half the processes that did so
    aborted at exit ("terminate called without an active exception").
    """
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        data = handle.read()
    return pq.read_table(pa.BufferReader(data), columns=columns, schema=schema)


def _is_local(path: str) -> bool:
    return "://" not in path


def _unlisted(pattern: str) -> list[str]:
    """Local entries `pattern` matches that Beam's listing leaves out without a word.

    Beam lists a local folder with `os.walk`, which drops a dangling symbolic
    link and does not enter a link to a folder; a folder the glob names is no
    file either. Each is returned here so that it becomes a dead letter. The
    same walk (links not followed: a link loop cannot make it endless) and
    Beam's own pattern syntax, so both see the same names. A folder under a
    `**` glob is left out: its files are matched themselves. Without `**` the walk goes
    no deeper than the pattern names, so `/data/*.jsonl` never lists all of `/data`.
    """
    if not _is_local(pattern):
        return []  # an object store holds objects only
    matches = re.compile(FileSystem.translate_pattern(pattern)).match
    root = os.path.dirname(re.split(r"[*?\[]", pattern, maxsplit=1)[0])
    start = root or "."
    levels = None if "**" in pattern else pattern[len(root) :].lstrip("/").count("/")
    found = []
    for folder, folders, files in os.walk(start):
        names = (*folders, *files)
        level = 0 if folder == start else os.path.relpath(folder, start).count("/") + 1
        if levels is not None and level >= levels:
            folders[:] = []  # names below cannot match: listed here, not entered
        for name in names:
            path = os.path.join(folder, name) if root else os.path.relpath(folder + "/" + name)
            if not matches(path) or os.path.isfile(path):
                continue
            if os.path.islink(path) or "**" not in pattern:
                found.append(path)
    return found


def some_files(pattern: str) -> list[str]:
    """The entries matching `pattern`: its files, and the local entries that cannot be read
    as one (for `pieces` to refuse by name); raises ValueError when there is none."""
    paths = sorted({*matching_files(pattern), *_unlisted(pattern)})
    if not paths:
        raise ValueError(f"{pattern!r} matches no file")
    return paths


def not_a_file(path: str) -> str | None:
    """Why a local entry the glob matched is not a file to read, or None when it is one."""
    if not _is_local(path) or os.path.isfile(path):
        return None
    if os.path.islink(path):
        target = os.readlink(path)
        if not os.path.exists(path):
            return f"a symbolic link to {target}, which does not exist"
        if os.path.isdir(path):
            return (
                f"a symbolic link to the folder {target}, whose files are not read: "
                f"name them with a glob such as {path}/*.jsonl"
            )
    if os.path.isdir(path):
        return f"a folder; name its files with a glob such as {path}/*.jsonl"
    if os.path.exists(path):
        return "not a regular file (a pipe, socket or device would block or never end)"
    return "it no longer exists"


class _Inflate(io.RawIOBase):
    """DEFLATE (zlib) streams, one after another as Beam reads them, decompressed one buffer
    at a time: Python has no file class for it, and Beam's decompresses each 16 MiB it reads
    whole."""

    def __init__(self, raw: IO[bytes]) -> None:
        super().__init__()
        self._raw = raw
        self._inflater = zlib.decompressobj()
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while True:
            if self._inflater.eof:  # a next stream, or the end
                self._pending = self._inflater.unused_data or self._raw.read(READ_CHUNK)
                if not self._pending:
                    return 0
                self._inflater = zlib.decompressobj()
            data = self._pending or self._raw.read(READ_CHUNK)
            if not data:
                raise EOFError("compressed file ended before the end-of-stream marker")
            out = self._inflater.decompress(data, len(buffer))
            self._pending = self._inflater.unconsumed_tail
            if out:
                buffer[: len(out)] = out
                return len(out)


_DECOMPRESSORS: dict[str, Callable[[IO[bytes]], IO[bytes]]] = {
    CompressionTypes.GZIP: lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"),
    CompressionTypes.BZIP2: lambda raw: bz2.BZ2File(raw, mode="rb"),
    CompressionTypes.LZMA: lambda raw: lzma.LZMAFile(raw, mode="rb"),  # noqa: SIM115 (`file_lines` closes it)
    CompressionTypes.ZSTD: lambda raw: io.BufferedReader(
        zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    ),
    CompressionTypes.DEFLATE: lambda raw: io.BufferedReader(_Inflate(raw)),
}
"""A decompressing reader per compression Beam names by extension. Each gives out at most
what is asked of it: Beam's own readers decompress a whole 16 MiB read at once and read a
line whole, so a 160 kB `.gz` of one 160 MB line took 1.6 GB. Python's raise on a truncated
file, where Beam's ended early without an error. zstd keeps its default window limit
(128 MiB; Beam raises it to 2 GiB): a file that needs more is refused as unreadable."""


def is_compressed(path: str) -> bool:
    """Whether Beam reads `path` decompressed (its extension names a compression)."""
    return CompressionTypes.detect_compression_type(path) != CompressionTypes.UNCOMPRESSED


SPLIT_BYTES = 64 << 20
"""A plain JSONL file is read in ranges of this many bytes, in parallel."""
READ_CHUNK = 1 << 20
"""What a reader asks for at a time where a line may be longer than it may hold."""
HEAD_BYTES = 64 << 10
"""What a dead letter keeps of a record cut off for its size: enough to recognize it."""

Piece = tuple[str, int]
"""Part of a file read on its own: a Parquet row group, or the start of a JSONL byte range."""


def _skip_line(handle: IO[bytes]) -> bytes:
    """Read past the end of the current line a chunk at a time; returns its last chunk."""
    chunk = b""
    while True:
        chunk = handle.readline(READ_CHUNK)
        if not chunk or chunk.endswith(b"\n"):
            return chunk


def _cut_off(first: bytes, handle: IO[bytes], limit: int) -> Unreadable:
    """The rest of a line over `limit` bytes read and counted, never held: its first bytes,
    size and SHA-256 stand for it."""
    digest = hashlib.sha256(first)
    size = len(first)
    while True:
        chunk = handle.readline(READ_CHUNK)
        digest.update(chunk)
        size += len(chunk)
        if not chunk or chunk.endswith(b"\n"):
            break
    body = size - (2 if chunk.endswith(b"\r\n") else 1 if chunk.endswith(b"\n") else 0)
    head = first[:HEAD_BYTES]
    return Unreadable(
        f"record of {body} bytes (cut off while read, its first {len(head)} kept; sha256 of "
        f"the line {digest.hexdigest()}) exceeds --max_record_bytes={limit}",
        head,
    )


def _read_lines(
    handle: IO[bytes], end: int | None, limit: int | None
) -> Iterator[bytes | Unreadable]:
    """The lines of `handle` until the one that begins at or after `end`; a line longer
    than `limit` bytes as an `Unreadable` holding its first bytes."""
    cap = -1 if limit is None else limit + 2  # room for the line's \r\n
    while end is None or handle.tell() < end:
        line = handle.readline(cap)
        if not line:
            return
        if limit is not None and len(line) == cap and not line.endswith(b"\n"):
            yield _cut_off(line, handle, limit)
        else:
            yield line


def file_lines(
    path: str, start: int, end: int | None, limit: int | None = None
) -> Iterator[bytes | Unreadable]:
    """The lines that begin in bytes [start, end) of a plain file (a compressed one: all).

    A line that began before `start` belongs to the range before, which reads
    it past its own end.
    """
    compression = CompressionTypes.detect_compression_type(path)
    raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
    if compression in _DECOMPRESSORS:
        with raw, _DECOMPRESSORS[compression](raw) as handle:
            yield from _read_lines(handle, None, limit)
        return
    with raw:
        if start:
            raw.seek(start - 1)
            _skip_line(raw)
        yield from _read_lines(raw, end, limit)


def _unreadable(path: str, read: int, where: str, err: Exception | str) -> Record:
    after = f" after {read} records" if read else ""
    why = err if isinstance(err, str) else f"{type(err).__name__}: {err}"
    return path, Unreadable(f"{path} cannot be read{where}{after}: {why}")


def jsonl_records(
    path: str, start: int = 0, end: int | None = None, limit: int | None = None
) -> Iterator[Record]:
    """The lines of a JSONL file (or of one byte range of it), blank ones skipped; an
    `Unreadable` where reading fails, or in place of a line over `limit` bytes."""
    read = 0
    try:
        for line in file_lines(path, start, end, limit):
            if isinstance(line, Unreadable):
                read += 1
                _BYTES_READ.inc(len(line.head))
                yield path, line
                continue
            _BYTES_READ.inc(len(line))
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
    why = not_a_file(path)
    if why is not None:
        yield _unreadable(path, 0, "", why)
        return
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


def _oversized_group(parquet: pq.ParquetFile, index: int, limit: int | None) -> str | None:
    """Why a row group is not read: more bytes, uncompressed, than `limit` per row.

    Its rows cannot all be under the limit, and a row group is read whole: a
    small compressed file of one huge value would take the machine. A huge
    value among many small rows is not caught here (its row is refused once
    read), as Parquet records no value sizes.
    """
    meta = parquet.metadata.row_group(index)
    if limit is None or meta.total_byte_size <= limit * max(meta.num_rows, 1):
        return None
    return (
        f"{meta.total_byte_size} bytes uncompressed for {meta.num_rows} rows, more than "
        f"--max_record_bytes={limit} a row: not read"
    )


def row_group_records(path: str, index: int, limit: int | None = None) -> Iterator[Record]:
    """The rows of one row group; an `Unreadable` where reading fails (a corrupt page) or in
    place of a row group whose rows are over `limit` bytes on average."""
    read = 0
    try:
        with FileSystems.open(path) as handle:
            parquet = pq.ParquetFile(handle)
            why = _oversized_group(parquet, index, limit)
            if why is not None:
                yield _unreadable(path, 0, f" (row group {index})", why)
                return
            group = parquet.read_row_group(index)
        for record in parquet_records(path, group):
            read += 1
            yield record
    except Exception as err:  # any failure to read or convert is this row group's dead letter
        yield _unreadable(path, read, f" (row group {index})", err)


def piece_records(
    element: Piece | Record, file_format: FileFormat, limit: int | None = None
) -> Iterator[Record]:
    """The records of one piece (an `Unreadable` record passes through); a JSONL line over
    `limit` bytes is cut off while read."""
    path, start = element
    if not isinstance(start, int):
        yield path, start
    elif file_format == "parquet":
        yield from row_group_records(path, start, limit)
    else:
        yield from jsonl_records(path, start, start + SPLIT_BYTES, limit)


def file_records(
    pattern: str, file_format: FileFormat, limit: int | None = None
) -> Iterator[Record]:
    """The records of the files matching `pattern`, in file order, read as a stream.

    A JSONL file line by line, a Parquet file row group by row group: a worker
    never holds a whole file. A pattern matching no file raises ValueError.
    """
    for path in some_files(pattern):
        for piece in pieces(path, file_format):
            yield from piece_records(piece, file_format, limit)


class ReadRecords(beam.PTransform[beam.pvalue.PBegin, beam.PCollection[tuple[str, Any]]]):
    """`(source, payload bytes)` for every record of a JSONL or Parquet file or glob.

    The payload is declared `Any` to Beam, not `bytes | Unreadable`: every consumer
    takes the payload to a decoder that refuses an `Unreadable`, and those
    declared on `bytes` still type-check. With `limit` (`--max_record_bytes`) a longer
    JSONL line is never held: it comes as an `Unreadable` with its first bytes.
    """

    def __init__(self, pattern: str, file_format: FileFormat, limit: int | None = None) -> None:
        super().__init__()
        self._pattern = pattern
        self._format = file_format
        self._limit = limit

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[tuple[str, Any]]:
        return (
            pbegin
            | "Pattern" >> beam.Create([self._pattern])
            | "Match" >> beam.FlatMap(some_files)
            | "SpreadFiles" >> beam.Reshuffle()
            | "Pieces" >> beam.FlatMap(pieces, self._format).with_output_types(Any)
            | "SpreadPieces" >> beam.Reshuffle()
            | "Read"
            >> beam.FlatMap(piece_records, self._format, self._limit).with_output_types(Any)
        )
