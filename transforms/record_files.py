"""The one reader of record files: requests, catalogs, prompts and answers, JSONL or Parquet.

`ReadRecords` for pipelines and `file_records` for a worker re-reading a file
(the refreshed catalog, `evpack catalog load`) give the same records: each is
`(source, payload bytes)`, the source being the file's path as matched.
- JSONL: each line as bytes, so a line that is not UTF-8 is refused by its
  decoder with its byte offset rather than failing the read; `\n` and `\r\n`
  both end a line; blank lines carry nothing and are skipped. A byte-order
  mark is left to the decoder (`packer.parsing.strict_json.decode_text` drops one).
- Parquet: each row as a JSON object (`transforms.parquet_rows`).
Compressed files are read by their extension, and memory is bounded whatever
a file holds: a line over `--max_record_bytes` is cut off while read
(`transforms.bounded_lines`), a Parquet row group over the limit per row is
not read. A file is read in pieces (`pieces`: Parquet row groups, byte ranges
of plain JSONL), so a large file is still read in parallel; a compressed one
is read whole.

No file can fail a run or lose records without a word: an entry the glob
matches that is no file (a dangling symbolic link, a link to a folder, a
folder, a pipe) is one `Unreadable` record naming it (Beam's listing drops the
first two silently); a file that cannot be read, or stops being readable half
way (not Parquet, truncated, a corrupt page, a `.gz` that is not gzip or is cut
short), gives its records up to there and then one `Unreadable` record naming
the file and the error, which its decoder refuses like any bad record.

Rejected: one reader per kind of file. Requests, catalog side input, joined
catalog and refreshed catalog each had theirs, and they differed on BOMs,
invalid UTF-8 and Parquet strings. Rejected: Beam's file readers, which fail the
whole job on a file they cannot read (and see `transforms.bounded_lines`).
"""

import os
import re
from collections.abc import Iterable, Iterator
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes, FileSystem
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from packer.parsing.names import METRICS_NAMESPACE, FileFormat
from packer.parsing.strict_json import Unreadable
from transforms.bounded_lines import file_lines, is_compressed
from transforms.parquet_rows import Record, oversized_group, parquet_records

_BYTES_READ = Metrics.counter(METRICS_NAMESPACE, "bytes_read")
"""JSONL bytes read, decompressed: what the run held, not what the files weigh."""


def is_blank(record: Record) -> bool:
    """Whether a JSONL line holds nothing but whitespace (skipped by both readers)."""
    payload = record[1]
    return isinstance(payload, bytes) and not payload.strip()


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
    The bytes are copied into memory Arrow owns before they are parsed. Arrow's
    scanner can release its last hold on its input on one of Arrow's own threads
    after the read has returned; when that input is Python's (a file object, or
    `bytes` wrapped by `pa.BufferReader`), the release needs the interpreter, and at
    interpreter exit that thread is torn down inside a C++ destructor: the process
    aborted ("terminate called without an active exception", seen in a core dump of
    `evpack verify`). Rejected: parsing the Python file object (the same abort, more
    often) and `pq.ParquetFile(...).read()` (no `schema` to read older files by).
    """
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        owned = pa.BufferOutputStream()
        owned.write(handle.read())
    return pq.read_table(pa.BufferReader(owned.getvalue()), columns=columns, schema=schema)


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


SPLIT_BYTES = 64 << 20
"""A plain JSONL file is read in ranges of this many bytes, in parallel."""
Piece = tuple[str, int]
"""Part of a file read on its own: a Parquet row group, or the start of a JSONL byte range."""


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


def row_group_records(path: str, index: int, limit: int | None = None) -> Iterator[Record]:
    """The rows of one row group; an `Unreadable` where reading fails (a corrupt page) or in
    place of a row group whose rows are over `limit` bytes on average."""
    read = 0
    try:
        with FileSystems.open(path) as handle:
            parquet = pq.ParquetFile(handle)
            why = oversized_group(parquet, index, limit)
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
