"""The one reader of record files: requests, catalogs, prompts and answers, JSONL or Parquet.

`ReadRecords` for pipelines and `file_records` for a worker re-reading a file
(the refreshed catalog, `evpack catalog load`) give the same records: each is
`(source, payload bytes)`, the source being the file's path as matched.
- JSONL: each line as bytes, so a line that is not UTF-8 is refused by its
  decoder with its byte offset rather than failing the read; `\n` and `\r\n`
  both end a line; blank lines carry nothing and are skipped. A byte-order
  mark is left to the decoder (`transforms.strict_json.decode_text` drops one).
- Parquet: each row as a JSON object (`row_payload`), strings that are not
  UTF-8 kept raw (`parquet_records`).
Compressed files (`.gz`, ...) are read by their extension.

Rejected: one reader per kind of file. Requests, catalog side input, joined
catalog and refreshed catalog each had theirs, and they differed on BOMs,
invalid UTF-8 and Parquet strings.
"""

import json
from collections.abc import Iterator
from typing import Any

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.coders import BytesCoder
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.parquetio import ReadAllFromParquetBatched
from apache_beam.io.textio import ReadFromTextWithFilename

from transforms.names import FileFormat


def is_blank(record: tuple[str, bytes]) -> bool:
    """Whether a JSONL line holds nothing but whitespace (skipped by both readers)."""
    return not record[1].strip()


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def row_payload(row: dict[str, Any]) -> str:
    """A Parquet row as a JSON payload.

    A null column or struct field is an absent field: Parquet has one schema per
    file, so a field that only some records carry is null in the others.
    """
    return json.dumps(_drop_nulls(row), default=str)


def _binary_strings(value_type: pa.DataType) -> pa.DataType:
    """`value_type` with every string inside it read as binary."""
    if pa.types.is_string(value_type):
        return pa.binary()
    if pa.types.is_large_string(value_type):
        return pa.large_binary()
    if pa.types.is_struct(value_type):
        fields = [value_type.field(i) for i in range(value_type.num_fields)]
        return pa.struct([f.with_type(_binary_strings(f.type)) for f in fields])
    if pa.types.is_list(value_type):
        return pa.list_(value_type.value_field.with_type(_binary_strings(value_type.value_type)))
    return value_type


def _raw_payload(row: dict[str, Any]) -> bytes:
    """A row whose strings are raw bytes as JSON bytes that keep them raw (invalid UTF-8 too)."""
    text = json.dumps(
        _drop_nulls(row),
        ensure_ascii=False,
        default=lambda v: v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else str(v),
    )
    return text.encode("utf-8", "surrogateescape")


def parquet_records(source: str, table: pa.Table) -> Iterator[tuple[str, bytes]]:
    """The rows of one Parquet batch as JSON payloads, whatever their strings hold.

    Parquet does not check that a string column holds UTF-8; a row that does
    not keeps its raw bytes in its payload, so `decode` refuses that row (with
    the byte offset) and the rows beside it are read. Beam's row reader would
    fail the whole read there instead.
    """
    try:
        rows = table.to_pylist()
    except UnicodeDecodeError:
        rows = []
        for i in range(table.num_rows):
            one = table.slice(i, 1)
            try:
                rows += one.to_pylist()
            except UnicodeDecodeError:
                binary = pa.schema([f.with_type(_binary_strings(f.type)) for f in one.schema])
                yield source, _raw_payload(one.cast(binary).to_pylist()[0])
    for row in rows:
        yield source, row_payload(row).encode("utf-8")


def matching_files(pattern: str) -> list[str]:
    """The files matching `pattern`, local or gs://, sorted (none is an empty list)."""
    return sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)


def file_records(pattern: str, file_format: FileFormat) -> Iterator[tuple[str, bytes]]:
    """The records of the files matching `pattern`, in file order, read as a stream.

    A JSONL file line by line, a Parquet file batch by batch: a worker never
    holds a whole file. A pattern matching no file raises ValueError.
    """
    paths = matching_files(pattern)
    if not paths:
        raise ValueError(f"{pattern!r} matches no file")
    for path in paths:
        with FileSystems.open(path) as handle:
            if file_format == "parquet":
                for batch in pq.ParquetFile(handle).iter_batches():
                    yield from parquet_records(path, pa.Table.from_batches([batch]))
                continue
            for line in iter(handle.readline, b""):
                record = (path, line.removesuffix(b"\n").removesuffix(b"\r"))
                if not is_blank(record):
                    yield record


class ReadRecords(beam.PTransform[beam.pvalue.PBegin, beam.PCollection[tuple[str, bytes]]]):
    """`(source, payload bytes)` for every record of a JSONL or Parquet file or glob."""

    def __init__(self, pattern: str, file_format: FileFormat) -> None:
        super().__init__()
        self._pattern = pattern
        self._format = file_format

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[tuple[str, bytes]]:
        if self._format == "parquet":
            return (
                pbegin
                | "Pattern" >> beam.Create([self._pattern])
                | "ReadParquet" >> ReadAllFromParquetBatched(with_filename=True)
                | "ToJson" >> beam.FlatMapTuple(parquet_records)
            )
        return (
            pbegin
            | "ReadJsonl" >> ReadFromTextWithFilename(self._pattern, coder=BytesCoder())
            | "SkipBlank" >> beam.Filter(lambda record: not is_blank(record))
        )
