"""Read request records, validate them, and dead-letter what cannot be packed.

Every input record ends in exactly one place: inside one packed request, or in a
dead letter that keeps its raw payload, the error, the stage and its file.

Two record shapes are accepted:
- nested: one request per record, with its `candidates` list;
- flat: one candidate per record, carrying the request fields; records are
  grouped by `request_id` and must agree on every request field.
In `auto` shape a record with `candidates` is nested, one with `evidence_id` flat.

Duplicate `request_id`s within a run (a request retried upstream, two files
overlapping): one record is kept, the one whose payload has the smallest
SHA-256, so the choice does not depend on file order, splitting or workers;
every other record with that id is dead-lettered at stage `dedupe`. In flat
shape, an exact repeat of a row is dead-lettered the same way.
"""

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import apache_beam as beam
import pyarrow as pa
from apache_beam import pvalue
from apache_beam.coders import BytesCoder
from apache_beam.io.parquetio import ReadAllFromParquetBatched
from apache_beam.io.textio import ReadFromTextWithFilename
from apache_beam.metrics import Metrics
from apache_beam.typehints.decorators import no_annotations
from pydantic import ValidationError

from packer import BUILDER_VERSION
from schemas import Candidate, DeadLetter, Request
from schemas._types import NOT_UNICODE, is_identifier, is_unicode
from transforms.strict_json import Refused, as_text, decode_text, loads

DEAD_LETTERS = "dead_letters"
METRICS_NAMESPACE = "evpack"

REQUEST_FIELDS = frozenset(Request.model_fields) - {"candidates"}
CANDIDATE_FIELDS = frozenset(Candidate.model_fields) - {"tenant_id"}

Shape = Literal["nested", "flat"]
InputShape = Literal["auto", "nested", "flat"]
FileFormat = Literal["jsonl", "parquet"]
DEFAULT_MAX_RECORD_BYTES = 4 * 1024 * 1024


def describe_validation_error(err: ValidationError) -> str:
    """One line per problem, `field.path: message`: the form of dead letters and flag errors."""
    parts = []
    for item in err.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in item["loc"]) or "record"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


@dataclass(frozen=True)
class Entry:
    """One decoded record on its way to grouping by request_id."""

    shape: Shape
    sha256: str
    source: str
    payload: str


def dead_letter(
    stage: str, error: str, payload: bytes | str, source: str, request_id: Any
) -> DeadLetter:
    """A dead letter stamped with this builder's version; it always encodes, whatever it holds.

    Bytes that are not UTF-8 and lone surrogates are kept as backslash escapes;
    `request_id` is kept only when it is a valid one (the payload still has it).
    """
    return DeadLetter(
        stage=stage,
        error=as_text(error),
        payload=as_text(payload),
        source=as_text(source),
        request_id=request_id if is_identifier(request_id) else None,
        builder_version=BUILDER_VERSION,
    )


SINK_PAYLOAD_BYTES = 1024 * 1024
SINK_ERROR_CHARS = 16 * 1024


def bounded(letter: DeadLetter) -> DeadLetter:
    """The dead letter cut to fit a Pub/Sub message (10 MB) and a BigQuery row, escapes and all.

    A payload over `SINK_PAYLOAD_BYTES` keeps its first bytes, and the error
    says how long it was and its SHA-256; an error over `SINK_ERROR_CHARS`
    (thousands of schema errors) keeps its start. JSON escaping at most
    sextuples text, so the message stays under the limit whatever it holds.
    Files have no such limit: batch dead letters are kept whole.
    """
    data = letter.payload.encode("utf-8")
    error = letter.error[:SINK_ERROR_CHARS]
    if len(data) <= SINK_PAYLOAD_BYTES and error == letter.error:
        return letter
    payload = letter.payload
    if len(data) > SINK_PAYLOAD_BYTES:
        payload = data[:SINK_PAYLOAD_BYTES].decode("utf-8", errors="ignore")
        digest = hashlib.sha256(data).hexdigest()
        kept = f"its first {SINK_PAYLOAD_BYTES} of {len(data)} bytes"
        error += f" (payload cut to {kept}, sha256 {digest})"
    return letter.model_copy(update={"payload": payload, "error": error})


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


def decode(
    source: str, payload: bytes | str, shape: InputShape, max_record_bytes: int
) -> tuple[str, Entry] | DeadLetter:
    """Check size, encoding, JSON and shape of one record and key it by its request_id.

    Total: every payload becomes an entry or a `parse` dead letter (limits in
    `transforms.strict_json`). The request_id must be text that encodes, as it
    keys the grouping.
    """
    raw = payload.encode("utf-8", errors="surrogatepass") if isinstance(payload, str) else payload
    text = decode_text(raw, max_record_bytes)
    if isinstance(text, Refused):
        return dead_letter("parse", text.reason, text.text, source, None)
    record = loads(text)
    if isinstance(record, Refused):
        return dead_letter("parse", record.reason, record.text, source, None)
    if not isinstance(record, dict):
        kind = type(record).__name__
        return dead_letter("parse", f"record must be a JSON object, got {kind}", text, source, None)
    request_id = record.get("request_id")
    if not isinstance(request_id, str) or not request_id:
        return dead_letter(
            "parse", "request_id: missing or not a non-empty string", text, source, None
        )
    if not is_unicode(request_id):
        return dead_letter("parse", f"request_id: {NOT_UNICODE}", text, source, None)
    record_shape = _shape_of(record, shape)
    if record_shape is None:
        return dead_letter(
            "parse",
            "record has neither candidates (nested shape) nor evidence_id (flat shape)",
            text,
            source,
            request_id,
        )
    digest = hashlib.sha256(raw).hexdigest()
    return request_id, Entry(record_shape, digest, source, text)


def _shape_of(record: dict[str, Any], shape: InputShape) -> Shape | None:
    if shape != "auto":
        return shape
    if "candidates" in record:
        return "nested"
    if "evidence_id" in record:
        return "flat"
    return None


def assemble(request_id: str, entries: Iterable[Entry]) -> tuple[Request | None, list[DeadLetter]]:
    """All records of one request_id become one validated request and dead letters."""
    ordered = sorted(entries, key=lambda e: (e.sha256, e.source))
    shapes = {e.shape for e in ordered}
    if len(shapes) > 1:
        error = (
            f"request_id {request_id!r} appears both as a nested record and as flat rows; "
            "send each request in one shape"
        )
        return None, [_letter(e, "dedupe", error, request_id) for e in ordered]
    if ordered[0].shape == "nested":
        return _assemble_nested(request_id, ordered)
    return _assemble_flat(request_id, ordered)


def _assemble_nested(
    request_id: str, ordered: list[Entry]
) -> tuple[Request | None, list[DeadLetter]]:
    letters: list[DeadLetter] = []
    kept: tuple[Entry, Request] | None = None
    for entry in ordered:
        try:
            request = Request.model_validate(json.loads(entry.payload))
        except ValidationError as err:
            letters.append(_letter(entry, "validate", describe_validation_error(err), request_id))
            continue
        if kept is None:
            kept = (entry, request)
            continue
        same = "an identical" if entry.sha256 == kept[0].sha256 else "a different"
        error = (
            f"duplicate request_id {request_id!r}: {same} record was kept "
            f"(payload sha256 {kept[0].sha256[:16]} from {kept[0].source})"
        )
        letters.append(_letter(entry, "dedupe", error, request_id))
    return (kept[1] if kept else None), letters


@dataclass(frozen=True)
class _FlatRow:
    """A flat record split into its request fields and its candidate."""

    entry: Entry
    header: dict[str, Any]
    candidate: Candidate

    @property
    def canonical_header(self) -> str:
        return json.dumps(self.header, sort_keys=True)


def _assemble_flat(
    request_id: str, ordered: list[Entry]
) -> tuple[Request | None, list[DeadLetter]]:
    letters: list[DeadLetter] = []
    rows: list[_FlatRow] = []
    seen: set[str] = set()
    for entry in ordered:
        if entry.sha256 in seen:
            error = f"duplicate row of request_id {request_id!r}: an identical row was kept"
            letters.append(_letter(entry, "dedupe", error, request_id))
            continue
        seen.add(entry.sha256)
        record = json.loads(entry.payload)
        fields = {k: v for k, v in record.items() if k in CANDIDATE_FIELDS}
        try:
            candidate = Candidate.model_validate({**fields, "tenant_id": record.get("tenant_id")})
        except ValidationError as err:
            error = f"candidate: {describe_validation_error(err)}"
            letters.append(_letter(entry, "validate", error, request_id))
            continue
        header = {k: v for k, v in record.items() if k in REQUEST_FIELDS}
        rows.append(_FlatRow(entry, header, candidate))
    if not rows:
        return None, letters
    if len({row.canonical_header for row in rows}) > 1:
        differing = sorted(
            k for k in REQUEST_FIELDS if len({json.dumps(r.header.get(k)) for r in rows}) > 1
        )
        error = (
            f"flat rows of request_id {request_id!r} disagree on request fields "
            f"{', '.join(differing)}; every row must carry the same request"
        )
        return None, letters + [_letter(r.entry, "group", error, request_id) for r in rows]
    rows.sort(key=lambda r: (r.candidate.evidence_id, r.entry.sha256))
    try:
        request = Request.model_validate(
            {**rows[0].header, "candidates": [r.candidate for r in rows]}
        )
    except ValidationError as err:
        error = describe_validation_error(err)
        return None, letters + [_letter(r.entry, "validate", error, request_id) for r in rows]
    return request, letters


def _letter(entry: Entry, stage: str, error: str, request_id: str) -> DeadLetter:
    return dead_letter(stage, error, entry.payload, entry.source, request_id)


class ReadRecords(beam.PTransform[beam.pvalue.PBegin, beam.PCollection[tuple[str, bytes]]]):
    """(source file, raw payload bytes) for every record of a JSONL or Parquet glob.

    JSONL lines are read as bytes, so a line that is not UTF-8 is refused by
    `decode` with its byte offset rather than failing the read; `\n` and
    `\r\n` both end a line. Blank lines carry nothing and are skipped.
    """

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
            | "SkipBlank" >> beam.Filter(lambda record: bool(record[1].strip()))
        )


class _Decode(beam.DoFn):
    def __init__(self, shape: InputShape, max_record_bytes: int) -> None:
        self._shape = shape
        self._max = max_record_bytes
        self._records = Metrics.counter(METRICS_NAMESPACE, "records_in")

    def process(self, record: tuple[str, bytes]) -> Iterator[Any]:
        self._records.inc()
        source, payload = record
        decoded = decode(source, payload, self._shape, self._max)
        if isinstance(decoded, DeadLetter):
            yield pvalue.TaggedOutput(DEAD_LETTERS, decoded)
        else:
            yield decoded


class _Assemble(beam.DoFn):
    def __init__(self) -> None:
        self._requests = Metrics.counter(METRICS_NAMESPACE, "requests_in")

    def process(self, group: tuple[str, Iterable[Entry]]) -> Iterator[Any]:
        request, letters = assemble(*group)
        for letter in letters:
            yield pvalue.TaggedOutput(DEAD_LETTERS, letter)
        if request is not None:
            self._requests.inc()
            yield request


class ParseRequests(beam.PTransform[beam.PCollection[tuple[str, bytes]], "ParseResult"]):
    """(source, payload) records -> validated, de-duplicated requests + dead letters.

    Counts `records_in` (records read) and `requests_in` (requests assembled).
    """

    def __init__(
        self, shape: InputShape = "auto", max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    ) -> None:
        super().__init__()
        self._shape = shape
        self._max = max_record_bytes

    @no_annotations  # the result is a ParseResult, not a PCollection
    def expand(self, records: beam.PCollection[tuple[str, bytes]]) -> "ParseResult":
        decoded = records | "Decode" >> beam.ParDo(_Decode(self._shape, self._max)).with_outputs(
            DEAD_LETTERS, main="entries"
        )
        assembled = (
            decoded.entries
            | "GroupByRequestId" >> beam.GroupByKey()
            | "Assemble" >> beam.ParDo(_Assemble()).with_outputs(DEAD_LETTERS, main="requests")
        )
        letters = (
            decoded[DEAD_LETTERS],
            assembled[DEAD_LETTERS],
        ) | "AllDeadLetters" >> beam.Flatten()
        return ParseResult(assembled.requests, letters)


@dataclass(frozen=True)
class ParseResult:
    """Valid requests and the dead letters of every record that did not make one."""

    requests: beam.PCollection[Request]
    dead_letters: beam.PCollection[DeadLetter]
