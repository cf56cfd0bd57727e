"""Fuzzing the parse boundary: any bytes in, a request or a dead letter out, never an exception.

The targets are the pure functions batch and streaming share (`decode`,
`assemble`, `split_payload`, `parse_record`, `parquet_records`), fed arbitrary
bytes, arbitrary JSON in both shapes and Parquet files of arbitrary column
types, and then the writers' encoders (Arrow / Parquet from the schemas,
BigQuery JSON rows, JSON lines) fed whatever a parsed request packs to.
Examples per target follow the hypothesis profile (`tests/conftest.py`).
"""

import bz2
import gzip
import io
import json
import lzma
import os
import tempfile
import zlib
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import zstandard
from apache_beam.io.gcp.pubsub import PubsubMessage
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from packer import Catalog, PackerRuntime, pack_request
from packer.pack import PackError
from packer.parsing.names import InputShape
from packer.parsing.request_records import Entry, assemble, decode, parse_record
from packer.parsing.strict_json import Unreadable
from pipelines.options.config_file import load_config
from schemas import DeadLetter, ExclusionRecord, ManifestRow, PackingConfig, Request
from schemas._types import describe_validation_error, is_unicode, json_context
from schemas.arrow import arrow_schema
from schemas.catalog import Revision
from schemas.config import DedupConfig, UtilityWeights
from tests.factories import candidate, document
from tests.strategies import hostile_text
from transforms.bounded_lines import HEAD_BYTES
from transforms.io.bigquery import to_bigquery_row
from transforms.io.pubsub import MAX_MESSAGE_RECORDS, event_timestamp, split_payload
from transforms.parquet_rows import parquet_records
from transforms.record_files import file_records

MAX_BYTES = 64 * 1024
STAGES = {"parse", "validate", "dedupe", "group"}
RUNTIME = PackerRuntime.load()
CATALOG = Catalog([document("d1"), document("d2", allowed_groups=("other",))])

numbers = st.one_of(
    st.integers(),
    st.sampled_from([2**63, 2**63 - 1, -(2**63) - 1, 10**40, 0, -1, 1]),
    st.floats(allow_nan=True, allow_infinity=True),
)
dates = st.one_of(
    st.sampled_from(
        [
            "9999-12-31T23:00:00-05:00",
            "0001-01-01T00:30:00+05:00",
            "9999-12-31T23:59:59Z",
            "0001-01-01T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-07-01",
            "not a date",
        ]
    ),
    st.datetimes().map(lambda d: d.isoformat()),
)
# Scalars a lax parser would convert: bools, numeric text, numbers where dates go, dates.
loose_scalars = st.one_of(
    st.booleans(),
    numbers,
    dates,
    st.sampled_from(["1", "0", "100", "0.5", "-1", "true", "yes", "1e3", "253402300800"]),
    st.sampled_from([0, 1, 100.0, 1.5, 253402300800, -62135596801, 1_782_864_000_000]),
)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), numbers, hostile_text, dates),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(hostile_text, inner, max_size=4)
    ),
    max_leaves=12,
)


def base_request(request_id: str = "q1") -> dict[str, Any]:
    """A valid nested request: two packable candidates and one the principal may not read."""
    return {
        "request_id": request_id,
        "tenant_id": "t1",
        "principal": {"user_id": "u1", "groups": ["support"]},
        "question": "How long is the return window?",
        "as_of": "2026-07-01T00:00:00Z",
        "candidates": [
            candidate("e1").model_dump(mode="json"),
            candidate("e2", text="Returns within 30 days.").model_dump(mode="json"),
            candidate("e3", "d2").model_dump(mode="json"),
        ],
    }


REQUEST_FIELDS = [*base_request(), "facets", "event_time", "history", "budget", "extra"]
CANDIDATE_FIELDS = [*base_request()["candidates"][0], "span", "rerank_score", "query_facets"]
SCALAR_LEAVES = [
    ("history",),
    ("as_of",),
    ("event_time",),
    ("principal", "clearance"),
    ("budget", "input_limit"),
    ("budget", "reserved_answer"),
    ("budget", "max_evidence_tokens"),
    ("candidates", 0, "retrieval_score"),
    ("candidates", 0, "rerank_score"),
    ("candidates", 0, "authority"),
    ("candidates", 0, "effective_at"),
    ("candidates", 0, "span", "start"),
    ("candidates", 1, "span", "end"),
]
"""Paths to the typed scalars of a request, where a loose value may be put."""


def put(record: dict[str, Any], path: tuple[str | int, ...], value: Any) -> None:
    """Set the value at `path`, creating objects on the way; a path through a value
    that is not an object (or a short array) is left alone."""
    node: Any = record
    for step in path[:-1]:
        if isinstance(step, str) and isinstance(node, dict):
            node = node.setdefault(step, {})
        elif isinstance(step, int) and isinstance(node, list) and step < len(node):
            node = node[step]  # type: ignore[index]
        else:
            return
    if isinstance(node, dict):
        node[path[-1]] = value


@st.composite
def mutated_requests(draw: st.DrawFn) -> dict[str, Any]:
    """The valid request with arbitrary values in some request, principal and candidate fields."""
    record = base_request(draw(st.sampled_from(["q1", "q2"])))
    for _ in range(draw(st.integers(0, 3))):
        record[draw(st.sampled_from(REQUEST_FIELDS))] = draw(json_values)
    if isinstance(record.get("principal"), dict) and draw(st.booleans()):
        record["principal"] = {**record["principal"], "groups": draw(st.lists(hostile_text))}
    if isinstance(record.get("candidates"), list):
        for _ in range(draw(st.integers(0, 3))):
            i = draw(st.integers(0, len(record["candidates"])))
            if i < len(record["candidates"]) and isinstance(record["candidates"][i], dict):
                field = draw(st.sampled_from(CANDIDATE_FIELDS))
                record["candidates"][i] = {**record["candidates"][i], field: draw(json_values)}
    for _ in range(draw(st.integers(0, 2))):
        put(record, draw(st.sampled_from(SCALAR_LEAVES)), draw(loose_scalars))
    if draw(st.booleans()):
        record["facets"] = draw(st.lists(hostile_text, max_size=500))
    if draw(st.booleans()):
        record["budget"] = {
            "input_limit": draw(st.integers(1, 2**64)),
            "max_evidence_tokens": draw(st.integers(1, 2**63)),
        }
    return record


def flat_rows(record: dict[str, Any]) -> list[dict[str, Any]]:
    """A nested record as flat rows (a non-list `candidates` gives one row carrying it)."""
    header = {k: v for k, v in record.items() if k != "candidates"}
    candidates = record.get("candidates")
    if not isinstance(candidates, list):
        return [{**header, "evidence_id": "x", "candidates": candidates}]
    return [
        {**header, **c} if isinstance(c, dict) else {**header, "evidence_id": c} for c in candidates
    ]


@st.composite
def encodings(draw: st.DrawFn, value: Any) -> bytes:
    """One JSON value as the bytes a producer might send: escaped, raw UTF-8, or with NaN."""
    how = draw(st.sampled_from(["ascii", "raw", "bom", "crlf"]))
    if how == "ascii":
        return json.dumps(value).encode("ascii")
    text = json.dumps(value, ensure_ascii=False)
    data = text.encode("utf-8", errors="surrogatepass")  # lone surrogates: invalid UTF-8
    return {"raw": data, "bom": b"\xef\xbb\xbf" + data, "crlf": data + b"\r"}[how]


def parse_all(
    records: Iterable[bytes], shape: InputShape = "auto"
) -> tuple[list[Request], list[DeadLetter], int]:
    """What the batch job does with records: decode each, group by request_id, assemble.

    Returns the requests, the dead letters and how many records the requests hold.
    """
    groups: dict[str, list[Entry]] = defaultdict(list)
    letters: list[DeadLetter] = []
    for record in records:
        decoded = decode("fuzz.jsonl", record, shape, MAX_BYTES)
        if isinstance(decoded, DeadLetter):
            letters.append(decoded)
        else:
            groups[decoded[0]].append(decoded[1])
    requests = []
    held = 0
    for request_id, entries in groups.items():
        request, more = assemble(request_id, entries)
        letters += more
        if request is not None:
            requests.append(request)
            held += 1 if entries[0].shape == "nested" else len(request.candidates)
    return requests, letters, held


def assert_encodes(letter: DeadLetter) -> None:
    """A dead letter is always writable: JSON line, BigQuery row, Pub/Sub message data."""
    assert letter.stage in STAGES and letter.error
    letter.model_dump_json().encode("utf-8")
    json.dumps(to_bigquery_row(letter)).encode("utf-8")


def assert_total(records: list[bytes], shape: InputShape = "auto") -> list[Request]:
    requests, letters, held = parse_all(records, shape)
    assert held + len(letters) == len(records)  # conservation: nothing lost, nothing twice
    for letter in letters:
        assert_encodes(letter)
    return requests


# Runs that stress the checks made before parsing: brackets left open, escapes, digits.
runs = st.builds(
    lambda piece, n, tail: piece * n + tail,
    st.sampled_from([b"[", b"{", b'{"a":', b'[{"a":[', b'"\\', b'\\"', b'"', b"1", b"-1e"]),
    st.integers(0, 3000),
    st.binary(max_size=20),
)


@given(st.lists(st.one_of(st.binary(max_size=200), runs), min_size=1, max_size=4))
def test_any_bytes_are_parsed_or_dead_lettered(records: list[bytes]) -> None:
    assert_total(records)


PATHOLOGICAL = {
    "brackets left open": b"[" * (4 << 20),
    "objects left open": b'{"a":' * (800 << 10),
    "escaped quotes, unterminated": b'"' + b'\\"' * (2 << 20),
    "quotes": b'"' * (4 << 20),
    "digits": b"1" * (4 << 20),
    "closed pairs": b"[]" * (2 << 20),
}


def test_a_record_of_4_mib_of_any_shape_is_refused_in_one_pass() -> None:
    """Each of these took hours, or escaped as a RecursionError, before the checks were
    linear: a string pattern that required its closing quote was tried again from every
    later quote, and brackets left open were not counted."""
    for name, record in PATHOLOGICAL.items():
        letter = decode("big.jsonl", record, "nested", 8 << 20)
        assert isinstance(letter, DeadLetter) and letter.stage == "parse", name
        assert letter.error.startswith("invalid JSON"), (name, letter.error)


def json_kind(value: Any) -> str:
    """The JSON type of a parsed value (a tuple is an array, an int a number)."""
    if isinstance(value, bool) or value is None:
        return repr(value) if value is None else "boolean"
    if isinstance(value, int | float):
        return "number"
    return {str: "string", list: "array", tuple: "array", dict: "object"}[type(value)]


def assert_kinds_kept(given: Any, kept: Any, path: str = "") -> None:
    """Every value the model kept has the JSON type it was given: nothing was coerced."""
    assert json_kind(given) == json_kind(kept), (path, given, kept)
    if isinstance(kept, dict):
        for key in kept.keys() & given.keys():
            assert_kinds_kept(given[key], kept[key], f"{path}.{key}")
    elif isinstance(kept, list):
        for i, (a, b) in enumerate(zip(given, kept, strict=True)):
            assert_kinds_kept(a, b, f"{path}.{i}")


@given(st.data())
def test_any_nested_json_is_parsed_or_dead_lettered(data: st.DataObject) -> None:
    values = data.draw(st.lists(st.one_of(mutated_requests(), json_values), min_size=1, max_size=3))
    records = [data.draw(encodings(v)) for v in values]
    for request in assert_total(records, "nested"):
        given = [
            v for v in values if isinstance(v, dict) and v.get("request_id") == request.request_id
        ]
        if len(given) == 1:  # with two, either may be the one kept
            assert_kinds_kept(given[0], request.model_dump(mode="json"))
        assert_packs_and_encodes(request)


@given(st.data())
def test_any_flat_json_is_parsed_or_dead_lettered(data: st.DataObject) -> None:
    rows = flat_rows(data.draw(mutated_requests()))
    if rows and data.draw(st.booleans()):
        rows.append(rows[0])  # an exact repeat
    records = [data.draw(encodings(row)) for row in rows] or [b"[]"]
    for request in assert_total(records, data.draw(st.sampled_from(["flat", "auto"]))):
        assert_packs_and_encodes(request)


@given(st.data())
def test_any_message_is_parsed_or_dead_lettered(data: st.DataObject) -> None:
    """A Pub/Sub message: one request, an array of them, or anything at all."""
    value = data.draw(
        st.one_of(
            mutated_requests(),
            st.lists(mutated_requests(), max_size=3),
            json_values,
            st.integers(990, 1010).map(lambda n: [0] * n),  # around the records-per-message cap
        )
    )
    message = data.draw(st.one_of(encodings(value), st.binary(max_size=200)))
    records = split_payload(message, MAX_BYTES)
    if isinstance(records, str):  # an array of too many records, refused whole
        assert records.startswith("message holds")
        return
    assert 0 < len(records) <= MAX_MESSAGE_RECORDS  # one message, a bounded number of letters
    for record in records:
        parsed = parse_record("sub#1", record, MAX_BYTES)
        if isinstance(parsed, list):
            assert len(parsed) == 1
            assert_encodes(parsed[0])
        else:
            assert_packs_and_encodes(parsed[1][1])


def assert_rows_encode(model: type[BaseModel], rows: list[BaseModel]) -> None:
    """Rows become a Parquet file (Arrow schema from the model) and BigQuery JSON rows."""
    table = pa.Table.from_pylist([r.model_dump(mode="python") for r in rows], arrow_schema(model))
    pq.write_table(table, io.BytesIO())
    for row in rows:
        json.dumps(to_bigquery_row(row), allow_nan=False).encode("utf-8")


def assert_packs_and_encodes(request: Request) -> None:
    """A parsed request packs (or is refused by the packer) and every output encodes."""
    config = PackingConfig(input_limit=2048, reserved_answer=256)
    try:
        result = pack_request(request, CATALOG, config, RUNTIME)
    except PackError:
        return
    result.prompt.model_dump_json().encode("utf-8")
    assert_rows_encode(ManifestRow, [result.manifest])
    if result.exclusions:
        assert_rows_encode(ExclusionRecord, list(result.exclusions))


def _validated(obj: Any, context: dict[str, bool] | None) -> str:
    """How validation ends: the model's JSON, or the error as a dead letter would say it."""
    try:
        return Request.model_validate(obj, context=context).model_dump_json()
    except ValidationError as err:
        return describe_validation_error(err)


@given(hostile_text, st.sampled_from(["question", "title", "facet", "group"]), st.booleans())
def test_skipping_the_encoding_check_for_json_text_changes_no_outcome(
    text: str, field: str, ascii_only: bool
) -> None:
    """`json_context` lets validation skip the per-string UTF-8 check only where the JSON
    text proves it passes: every request, with any text in any kind of field, written
    with escapes or raw, validates (or fails, with the same words) as without it."""
    record = base_request()
    first = record["candidates"][0]
    if field == "question":
        record["question"] = text
    elif field == "title":
        record["candidates"] = [first | {"title": text}, *record["candidates"][1:]]
    elif field == "facet":
        record["facets"] = ["a", text]
    else:
        record["principal"] = record["principal"] | {"groups": [text]}
    payload = json.dumps(record, ensure_ascii=ascii_only)
    if not is_unicode(payload):
        return  # raw lone surrogates: no UTF-8 bytes hold them, the decoder refuses the record
    context = json_context(payload)
    if not is_unicode(text):
        assert context is None  # its escape is in the text: every string is checked
    obj = json.loads(payload)
    assert _validated(obj, context) == _validated(obj, None)


def test_the_listed_hostile_classes_are_dead_letters_with_their_reason() -> None:
    """The classes that once crashed a job, each named in its dead letter."""
    base = base_request()
    title_surrogate = base | {"candidates": [base["candidates"][0] | {"title": "\ud800"}]}
    cases = {
        b'{"request_id": "q1", "x": "\xff"}': ("parse", "invalid UTF-8 at byte 27"),
        b"[" * 1000 + b"]" * 1000: ("parse", "nested deeper than 32 levels"),
        b'{"request_id": "q1", "x": ' + b"1" * 4301 + b"}": ("parse", "number literal longer"),
        b'{"request_id": "q1", "x": NaN}': ("parse", "NaN is not a JSON number"),
        b'{"request_id": "q1", "request_id": "q2"}': ("parse", "'request_id' appears twice"),
        json.dumps(base | {"request_id": "\ud800"}).encode(): ("parse", "request_id: not valid"),
        json.dumps(title_surrogate).encode(): ("validate", "candidates.0.title: not"),
        json.dumps(base | {"budget": {"input_limit": 2**63}}).encode(): (
            "validate",
            "budget.input_limit: Input should be less than or equal to 9223372036854775807",
        ),
        json.dumps(base | {"as_of": "9999-12-31T23:00:00-05:00"}).encode(): (
            "validate",
            "as_of: 9999-12-31T23:00:00-05:00 is outside years 1..9999 in UTC",
        ),
        json.dumps(base | {"event_time": "0001-01-01T00:00:00+01:00"}).encode(): (
            "validate",
            "event_time: 0001-01-01T00:00:00+01:00 is outside",
        ),
    }
    for record, (stage, reason) in cases.items():
        requests, letters, _ = parse_all([record])
        assert not requests and len(letters) == 1, record[:80]
        assert (letters[0].stage, reason in letters[0].error) == (stage, True), letters[0].error
        assert_encodes(letters[0])


def test_a_bom_and_crlf_are_accepted() -> None:
    line = json.dumps(base_request()).encode()
    requests, letters, _ = parse_all([b"\xef\xbb\xbf" + line + b"\r"])
    assert [r.request_id for r in requests] == ["q1"] and not letters


def test_values_are_taken_only_as_their_json_type() -> None:
    """A lax parser would read each of these as something else, without a word."""
    base = base_request()
    first = base["candidates"][0]
    cases = {
        "as_of": (base | {"as_of": 253402300800}, "as_of: a timestamp is ISO 8601"),
        "digits": (base | {"event_time": "0"}, "event_time: a timestamp is ISO"),
        "bool budget": (
            base | {"budget": {"input_limit": True}},
            "budget.input_limit: Input should be a valid integer",
        ),
        "text budget": (
            base | {"budget": {"max_evidence_tokens": "100"}},
            "budget.max_evidence_tokens: Input should be a valid integer",
        ),
        "history": (base | {"history": "yes"}, "history: Input should be a valid boolean"),
        "score": (
            base | {"candidates": [first | {"retrieval_score": "0.5"}]},
            "candidates.0.retrieval_score: Input should be a valid number",
        ),
    }
    for name, (record, reason) in cases.items():
        requests, letters, _ = parse_all([json.dumps(record).encode()])
        assert not requests and len(letters) == 1, name
        letter = letters[0]
        assert (letter.stage, reason in letter.error) == ("validate", True), letter.error


ARROW_SCALARS: list[tuple[pa.DataType, st.SearchStrategy[Any]]] = [
    (pa.string(), st.text(st.characters(exclude_categories=("Cs",)), max_size=20)),
    (pa.binary(), st.binary(max_size=20)),
    (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    (pa.uint64(), st.integers(0, 2**64 - 1)),
    (pa.float64(), st.floats()),
    (pa.float16(), st.floats(width=16)),
    (pa.bool_(), st.booleans()),
    (pa.timestamp("ns"), st.integers(-(2**63), 2**63 - 1)),
    (pa.timestamp("s", tz="+05:00"), st.integers(-(2**40), 2**40)),
    (pa.date32(), st.integers(-(2**31), 2**31 - 1)),
    (pa.time64("us"), st.integers(0, 86_400_000_000 - 1)),
    (pa.duration("ms"), st.integers(-(2**63), 2**63 - 1)),
    (pa.decimal128(38, 4), st.decimals(-(10**33), 10**33, places=4, allow_nan=False)),
]
"""Arrow types a Parquet producer may write, each with values over its whole range."""


@st.composite
def arrow_columns(draw: st.DrawFn, rows: int) -> pa.Array:
    """A column of `rows` values of one Arrow type, plain, in a list, a struct, or encoded."""
    value_type, values = draw(st.sampled_from(ARROW_SCALARS))
    items = [draw(st.one_of(st.none(), values)) for _ in range(rows)]
    column = pa.array(items, value_type)
    if value_type == pa.binary() and draw(st.booleans()):
        column = column.view(pa.string())  # strings Parquet does not check are UTF-8
    how = draw(st.sampled_from(["plain", "list", "struct", "dictionary"]))
    if how == "list":
        return pa.ListArray.from_arrays(pa.array(range(rows + 1), pa.int32()), column)
    if how == "struct":
        return pa.StructArray.from_arrays([column], ["start"])
    if how == "dictionary" and pa.types.is_string(column.type):
        return column.dictionary_encode()
    return column


@given(st.data())
def test_any_parquet_file_is_parsed_or_dead_lettered(data: st.DataObject) -> None:
    """Any columns under request and candidate names: one record per row, each decoded."""
    rows = data.draw(st.integers(1, 4))
    names = data.draw(st.lists(st.sampled_from(REQUEST_FIELDS + CANDIDATE_FIELDS), unique=True))
    columns = {name: data.draw(arrow_columns(rows)) for name in names}
    sink = io.BytesIO()
    pq.write_table(pa.table(columns) if columns else pa.table({"n": [0] * rows}), sink)
    table = pq.read_table(io.BytesIO(sink.getvalue()))
    records = [payload for _, payload in parquet_records("fuzz.parquet", table)]
    assert len(records) == rows  # one payload per row: nothing lost, nothing crashed
    assert_total(records)


CONFIG_LEAVES = [
    *((name,) for name in PackingConfig.model_fields if name not in {"weights", "dedup"}),
    *(("weights", name) for name in UtilityWeights.model_fields),
    *(("dedup", name) for name in DedupConfig.model_fields),
]


@given(st.data())
def test_any_config_is_loaded_or_refused_naming_the_file(data: st.DataObject) -> None:
    """A config file of loose values: a config that kept every value's type, or a ValueError."""
    settings: dict[str, Any] = {}
    for _ in range(data.draw(st.integers(1, 4))):
        value = data.draw(st.one_of(loose_scalars, json_values))
        put(settings, data.draw(st.sampled_from(CONFIG_LEAVES)), value)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as handle:
        handle.write(json.dumps(settings))  # JSON is YAML
        handle.flush()
        try:
            config = load_config(handle.name)
        except ValueError as err:
            assert f"--config {handle.name!r}" in str(err)
            return
    assert_kinds_kept(settings, config.model_dump(mode="json"))


@given(st.one_of(st.text(max_size=40), st.integers().map(str), dates, loose_scalars.map(str)))
def test_any_event_time_attribute_is_a_usable_time_or_a_reason(value: str) -> None:
    """A time is one every later step can hold as a datetime; anything else says why not."""
    stamp = event_timestamp(PubsubMessage(b"{}", {"event_time": value}), "event_time")
    if isinstance(stamp, str):
        assert stamp.startswith("attribute event_time=")
    else:
        assert stamp is not None and stamp.to_utc_datetime(has_tz=True).year >= 1


def test_a_long_array_is_refused_before_its_items_are_validated() -> None:
    """Two million wrong items gave two million errors: 8 s and a 90 MB dead letter."""
    record = json.dumps(base_request() | {"facets": [1] * (2 << 20)}).encode()
    letter = decode("big.jsonl", record, "nested", 8 << 20)
    assert not isinstance(letter, DeadLetter)
    _, [refused] = assemble(*letter[:1], [letter[1]])
    assert refused.error == "facets: array of 2097152 items, more than 10000"


@st.composite
def nanosecond_times(draw: st.DrawFn) -> tuple[int, str]:
    """A time as nanoseconds since the epoch and as ISO text of 7 to 12 fraction digits,
    written with `T` or a space (Parquet's), `Z`, an offset or none."""
    seconds = draw(st.integers(0, 253_402_300_799 - 86_400))
    nanos = draw(st.one_of(st.integers(0, 999), st.integers(0, 999_999_999)))
    digits = draw(st.integers(9, 12))
    minutes = draw(st.sampled_from([None, 0, 90, -330]))
    moment = datetime.fromtimestamp(seconds, UTC)
    zone = "" if minutes is None else "Z" if minutes == 0 else ""
    if minutes:
        moment = moment.astimezone(timezone(timedelta(minutes=minutes)))
    text = moment.replace(tzinfo=None).isoformat(sep=draw(st.sampled_from(["T", " "])))
    text = text[:19] + "." + f"{nanos:09d}".ljust(digits, "0")
    if minutes:
        sign, left = ("-", -minutes) if minutes < 0 else ("+", minutes)
        zone = f"{sign}{left // 60:02d}:{left % 60:02d}"
    return seconds * 10**9 + nanos, text + zone


def _effective(revision_at: str, as_of: str) -> bool:
    revision = Revision(revision_id="r1", effective_at=revision_at)
    catalog = Catalog([document("d1", revisions=(revision,))])
    when = Request.model_validate({**base_request(), "as_of": as_of}).as_of
    assert when is not None
    return "r1" in catalog.revision_state("t1", "d1", when).effective


@given(nanosecond_times(), st.integers(-1500, 1500))
def test_a_revision_is_never_effective_before_its_time_whatever_the_precision(
    revision: tuple[int, str], gap: int
) -> None:
    """Digits past the microsecond round toward "not yet effective": a revision taking
    effect even 1 ns after `as_of` is not applied; one a microsecond or more before is."""
    revision_ns, revision_text = revision
    as_of_ns = revision_ns + gap
    as_of = datetime.fromtimestamp(as_of_ns // 10**9, UTC).isoformat()[:19]
    as_of_text = f"{as_of}.{as_of_ns % 10**9:09d}Z"
    effective = _effective(revision_text, as_of_text)
    if as_of_ns < revision_ns:
        assert not effective, (revision_text, as_of_text)
    if as_of_ns >= -(-revision_ns // 1000) * 1000:  # the microsecond it rounds up to
        assert effective, (revision_text, as_of_text)


COMPRESSIONS = {
    ".gz": gzip.compress,
    ".bz2": bz2.compress,
    ".xz": lzma.compress,
    ".zst": zstandard.ZstdCompressor().compress,
    ".deflate": zlib.compress,
    "": bytes,
}


@given(
    st.lists(st.one_of(st.binary(max_size=120), runs), max_size=6),
    st.sampled_from(sorted(COMPRESSIONS)),
    st.one_of(st.none(), st.integers(0, 400)),
    st.integers(1, 80),
)
def test_any_compressed_file_is_read_in_bounded_records_or_named_unreadable(
    lines: list[bytes], suffix: str, cut: int | None, limit: int
) -> None:
    """Whatever a file holds, compressed or cut short: records of at most the limit (and its
    line end), an `Unreadable` naming the file for the rest, never an exception."""
    data = COMPRESSIONS[suffix](b"\n".join(lines))
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/in.jsonl{suffix}"
        with open(path, "wb") as handle:
            handle.write(data if cut is None else data[:cut])
        records = list(file_records(path, "jsonl", limit))
    for source, payload in records:
        assert source == path
        if isinstance(payload, Unreadable):
            assert len(payload.head) <= HEAD_BYTES
            assert payload.reason.startswith((f"{path} cannot be read", "record of "))
        else:
            assert len(payload) <= limit + 1
        assert isinstance(decode(source, payload, "auto", limit), Request | DeadLetter)


ENTRY_KINDS = ("file", "empty", "folder", "dangling", "to_file", "to_folder", "loop")


def _make_entry(folder: str, name: str, kind: str) -> None:
    path = os.path.join(folder, name)
    targets = {
        "dangling": os.path.join(folder, "missing"),
        "to_file": os.path.join(folder, "..", "target.jsonl"),
        "to_folder": os.path.join(folder, ".."),
        "loop": path,
    }
    if kind in targets:
        os.symlink(targets[kind], path)
    elif kind == "folder":
        os.mkdir(path)
    else:
        with open(path, "wb") as handle:
            handle.write(b"" if kind == "empty" else b'{"n": 1}\n')


@given(
    st.dictionaries(
        st.from_regex(r"[a-z]{1,6}\.jsonl", fullmatch=True),
        st.sampled_from(ENTRY_KINDS),
        min_size=1,
        max_size=6,
    )
)
def test_every_entry_a_glob_matches_is_read_or_named(entries: dict[str, str]) -> None:
    """Files, folders and symbolic links of every kind: each entry the glob matches gives its
    records or one `Unreadable` naming it; none is skipped without a word."""
    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, "target.jsonl"), "wb") as handle:
            handle.write(b'{"n": 2}\n')
        folder = os.path.join(root, "in")
        os.mkdir(folder)
        for name, kind in entries.items():
            _make_entry(folder, name, kind)
        records = list(file_records(f"{folder}/*.jsonl", "jsonl", 1024))
    unreadable = {s for s, p in records if isinstance(p, Unreadable)}
    readable = {s for s, p in records if isinstance(p, bytes)}
    for name, kind in entries.items():
        path = os.path.join(folder, name)
        if kind in ("file", "to_file"):
            assert path in readable and path not in unreadable, kind
        elif kind != "empty":
            assert path in unreadable and path not in readable, kind
    assert all(
        p.reason.startswith(f"{s} cannot be read") for s, p in records if isinstance(p, Unreadable)
    )
