"""The lines of a plain or compressed file, none held past the record limit.

Compressed files (`.gz`, `.bz2`, `.xz`, `.zst`, `.deflate`) are read by their
extension, decompressed a buffer at a time. Given `--max_record_bytes`, a
line is read at most that far; a longer one is read on a chunk at a time,
counted and hashed, never held, and comes out as an `Unreadable` keeping its
first `HEAD_BYTES`, its size and its SHA-256 (a 160 kB `.gz` of one 160 MB
line took 1.6 GB when lines were read whole). Rejected: Beam's text reader,
whose time is quadratic in the length of a line (20 s for one line of 20 MB,
an hour for 300 MB) where Python's `readline` is linear, and whose
decompressor ends a truncated `.gz` early without an error.
"""

import bz2
import gzip
import hashlib
import io
import lzma
import zlib
from collections.abc import Callable, Iterator
from typing import IO, Any

import zstandard
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from packer.parsing.strict_json import Unreadable

READ_CHUNK = 1 << 20
"""What a reader asks for at a time where a line may be longer than it may hold."""
HEAD_BYTES = 64 << 10
"""What a dead letter keeps of a record cut off for its size: enough to recognize it."""


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
