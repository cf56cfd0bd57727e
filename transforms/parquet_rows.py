"""Parquet rows as the JSON records every decoder reads.

A row becomes a JSON object (`row_payload`): a null column is an absent
field, strings that are not UTF-8 are kept raw for the decoder to refuse
(`parquet_records`), and values JSON has no type for are written as JSON
would hold them (`json_types`). A row group whose rows are over the record
limit on average is not read (`oversized_group`). Rejected: Beam's row
reader, which fails the whole read on one row that is not UTF-8.
"""

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from packer.parsing.strict_json import Unreadable

Record = tuple[str, bytes | Unreadable]
"""One record: its source file and its payload bytes (or why the file reads no further)."""


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


def oversized_group(parquet: pq.ParquetFile, index: int, limit: int | None) -> str | None:
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
