"""The streaming pieces without emulators: windowed counts under TestStream, once per
request_id, message shapes, catalog refresh and option checks."""

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.io.gcp.pubsub import PubsubMessage
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.testing import test_stream
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.window import TimestampedValue
from apache_beam.utils.timestamp import Timestamp
from google.api_core.exceptions import (
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ServiceUnavailable,
)
from hypothesis import given
from hypothesis import strategies as st

from packer import BUILDER_VERSION
from packer.parsing.dead_letters import SINK_ERROR_CHARS, SINK_PAYLOAD_BYTES, bounded, dead_letter
from packer.parsing.request_records import REMEMBERED
from pipelines.options.jobs import resolve_streaming
from schemas import DeadLetter, ExclusionRecord, LabelEntry, PromptMessage
from schemas._types import is_identifier
from schemas.prompt_formats import PromptLine
from tests.factories import candidate, document, request
from tests.strategies import markup
from transforms.catalog.refresh import RefreshingCatalog
from transforms.exclusion_counts import WindowedExclusionCounts
from transforms.io.publish import failure_kind, unpublished
from transforms.io.pubsub import (
    dead_letter_message,
    event_timestamp,
    prompt_message,
    split_payload,
)
from transforms.io.refusal_board import unusable_counter, unusable_topic
from transforms.stream_parse import ParseRequestStream


def _streaming_pipeline() -> beam.Pipeline:
    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = True
    return beam.Pipeline(runner="BundleBasedDirectRunner", options=options)


def _exclusion(n: int, tenant: str, reason: str = "unauthorized") -> ExclusionRecord:
    return ExclusionRecord(
        request_id=f"r{n}",
        tenant_id=tenant,
        event_time=None,
        evidence_id=f"e{n}",
        document_id=None,
        revision_id=None,
        reason=reason,
        detail="",
        builder_version="b",
    )


def _at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def test_windowed_counts_with_late_data() -> None:
    stream = (
        test_stream.TestStream()
        .advance_watermark_to(0)
        .add_elements(
            [
                TimestampedValue(_exclusion(1, "acme"), 10),
                TimestampedValue(_exclusion(2, "acme"), 20),
                TimestampedValue(_exclusion(3, "globex", "deleted"), 30),
                TimestampedValue(_exclusion(4, "acme"), 70),
            ]
        )
        .advance_watermark_to(130)  # both windows fire on time
        .add_elements([TimestampedValue(_exclusion(5, "acme"), 50)])  # late, within lateness
        .advance_watermark_to(200)  # first window's lateness is over
        .add_elements([TimestampedValue(_exclusion(6, "acme"), 55)])  # too late: dropped
        .advance_watermark_to_infinity()
    )
    with _streaming_pipeline() as p:
        counts = (
            p
            | stream
            | WindowedExclusionCounts(window_seconds=60, allowed_lateness_seconds=90)
            | beam.Map(lambda c: (c.tenant_id, c.reason, c.count, c.window_start, c.window_end))
        )
        assert_that(
            counts,
            equal_to(
                [
                    ("acme", "unauthorized", 2, _at(0), _at(60)),
                    ("globex", "deleted", 1, _at(0), _at(60)),
                    ("acme", "unauthorized", 1, _at(60), _at(120)),
                    ("acme", "unauthorized", 1, _at(0), _at(60)),  # the late pane: a delta
                ]
            ),
        )


def test_first_record_per_request_id_wins_later_copies_are_dead_letters() -> None:
    req = request(candidate("e1"), request_id="q1").model_dump_json()
    other = request(candidate("e2"), request_id="q2").model_dump_json()
    changed = request(candidate("e3"), request_id="q1").model_dump_json()
    stream = (
        test_stream.TestStream()
        .add_elements([("m1", req)])
        .add_elements([("m2", req), ("m3", other), ("m4", "{oops")])
        .add_elements([("m5", changed)])
        .advance_watermark_to_infinity()
    )
    with _streaming_pipeline() as p:
        parsed = p | stream | ParseRequestStream(max_record_bytes=1 << 20)
        assert_that(
            parsed.requests | beam.Map(lambda r: (r.request_id, r.candidates[0].evidence_id)),
            equal_to([("q1", "e1"), ("q2", "e2")]),
            label="requests",
        )
        assert_that(
            parsed.dead_letters
            | beam.Map(lambda d: (d.stage, d.source, d.request_id, d.error.split(":")[0])),
            equal_to(
                [
                    ("dedupe", "m2", "q1", "duplicate request_id 'q1'"),
                    ("parse", "m4", None, "invalid JSON"),
                    ("dedupe", "m5", "q1", "duplicate request_id 'q1'"),
                ]
            ),
            label="letters",
        )


def test_request_ids_packed_before_a_restart_are_remembered() -> None:
    known = request(candidate("e1"), request_id="q-before").model_dump_json()
    fresh = request(candidate("e1"), request_id="q-new").model_dump_json()
    stream = (
        test_stream.TestStream()
        .add_elements([("m1", known), ("m2", fresh), ("m3", known)])
        .advance_watermark_to_infinity()
    )
    remembered = RememberedIds(frozenset({"q-before"}))
    with _streaming_pipeline() as p:
        parsed = p | stream | ParseRequestStream(1 << 20, remembered=remembered)
        ids = parsed.requests | "Ids" >> beam.Map(lambda r: r.request_id)
        assert_that(ids, equal_to(["q-new"]), label="requests")
        letters = parsed.dead_letters | "Letters" >> beam.Map(lambda d: (d.source, d.error))
        error = "duplicate request_id 'q-before': a record was packed " + REMEMBERED
        assert_that(letters, equal_to([("m1", error), ("m3", error)]), label="letters")


@dataclass(frozen=True)
class RememberedIds:
    """What the manifests table would say: these ids were packed before the start."""

    ids: frozenset[str]

    def __call__(self) -> frozenset[str]:
        return self.ids


def _message(attributes: dict[str, str]) -> PubsubMessage:
    return PubsubMessage(b"{}", attributes)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-11-15T12:00:00Z", Timestamp.from_rfc3339("2026-11-15T12:00:00Z")),
        ("1763208000000", Timestamp(seconds=1763208000)),
        ("yesterday", "attribute event_time='yesterday' is not RFC 3339 or epoch milliseconds"),
        ("-99999999999999999", "event_time='-99999999999999999' is outside years 1..9999"),
        ("9" * 40, "is outside years 1..9999"),
        ("-62135596800001", "is outside years 1..9999"),  # Beam holds it, datetime does not
        ("253402300800000", "is outside years 1..9999"),
        ("10000-01-01T00:00:00Z", "is not RFC 3339 or epoch milliseconds"),
        (" 5", "is not RFC 3339 or epoch milliseconds"),  # int() would read these
        ("1_000", "is not RFC 3339 or epoch milliseconds"),
        ("\u0661\u0662", "is not RFC 3339 or epoch milliseconds"),
    ],
)
def test_event_time_attribute(value: str, expected: object) -> None:
    stamp = event_timestamp(_message({"event_time": value}), "event_time")
    if isinstance(expected, str):
        assert isinstance(stamp, str) and expected in stamp
    else:
        assert stamp == expected
    assert event_timestamp(_message({}), "event_time") is None


def test_dead_letters_are_cut_to_fit_a_message() -> None:
    small = dead_letter("parse", "bad", "x" * 100, "s", None)
    assert bounded(small) == small
    huge = bounded(dead_letter("parse", "e" * 20_000, "é" * SINK_PAYLOAD_BYTES, "s", None))
    assert len(huge.payload.encode()) <= SINK_PAYLOAD_BYTES
    assert huge.payload == "é" * (SINK_PAYLOAD_BYTES // 2)
    assert f"of {2 * SINK_PAYLOAD_BYTES} bytes, sha256 " in huge.error
    assert huge.error.startswith("e" * SINK_ERROR_CHARS + " (payload cut")


@pytest.mark.parametrize(
    ("data", "payloads"),
    [
        (b'{"request_id": "a"}', [b'{"request_id": "a"}']),
        (
            b'[{"request_id": "a"}, {"request_id": "\xc3\xa9"}]',
            [b'{"request_id": "a"}', b'{"request_id": "\\u00e9"}'],
        ),
        (b"[]", [b"[]"]),
        (b"not json", [b"not json"]),
        (b"\xff\xfe", [b"\xff\xfe"]),
        (b"[" * 40 + b"]" * 40, [b"[" * 40 + b"]" * 40]),
        (b"[1, 2]" + b" " * 100, [b"[1, 2]" + b" " * 100]),
    ],
)
def test_split_payload(data: bytes, payloads: list[bytes]) -> None:
    assert split_payload(data, max_record_bytes=64) == payloads


def test_messages_carry_routing_attributes() -> None:
    prompt = PromptMessage(
        request_id="q1",
        tenant_id="acme",
        model="m",
        messages=[],
        label_map=[LabelEntry(label="E1", evidence_id="e1")],
        prompt_tokens=3,
        builder_version=BUILDER_VERSION,
        config_hash="c",
    )
    line = PromptLine(
        "q1", "acme", BUILDER_VERSION, prompt.model_dump_json(), (("E1", "E2"),), (), "ab12"
    )
    message = prompt_message(line, "run-7")
    assert message.attributes == {
        "request_id": "q1",
        "tenant_id": "acme",
        "builder_version": BUILDER_VERSION,
        "run_id": "run-7",
        "prompt_sha256": "ab12",
        "dedup_id": "run-7:q1",
        "conflicts": '[["E1","E2"]]',
        "uncovered_facets": "[]",
    }
    assert PromptMessage.model_validate_json(message.data) == prompt
    letter = DeadLetter(
        stage="parse", error="e", payload="p", source="s", request_id=None, builder_version="b"
    )
    assert dead_letter_message(letter).attributes == {"stage": "parse", "builder_version": "b"}
    assert json.loads(dead_letter_message(letter).data)["payload"] == "p"


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _write(path: Path, *groups: str) -> None:
    path.write_text(document("d1", allowed_groups=groups).model_dump_json() + "\n")


def test_catalog_is_reread_after_the_interval_and_kept_on_a_bad_read(tmp_path: Path) -> None:
    path = tmp_path / "catalog.jsonl"
    _write(path, "support")
    clock = _Clock()
    catalog = RefreshingCatalog(str(path), "jsonl", interval_seconds=10, clock=clock)
    first, failed = catalog.current()
    assert not failed
    _write(path, "finance")
    clock.now = 9.0
    assert catalog.current() == (first, False)  # not yet due
    clock.now = 10.0
    snap, failed = catalog.current()
    assert snap.documents[0].allowed_groups == ("finance",) and not failed
    path.write_text("{broken\n")
    clock.now = 20.0
    kept, failed = catalog.current()
    assert kept == snap and failed
    assert catalog.current() == (snap, False)  # the next attempt waits for the interval


def test_catalog_first_load_failure_is_raised(tmp_path: Path) -> None:
    catalog = RefreshingCatalog(str(tmp_path / "missing.jsonl"), "jsonl", interval_seconds=1)
    with pytest.raises(ValueError, match="matches no file"):
        catalog.current()


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--bigquery_dataset=nodot", "bigquery_dataset"),
        ("--subscription=requests", "subscription"),
        ("--prompts_topic=projects/p/subscriptions/x", "prompts_topic"),
        (
            "--window_seconds=0",
            "--window_seconds must be positive, got 0; pass e.g. --window_seconds=60",
        ),
        ("--allowed_lateness_seconds=-1", "--allowed_lateness_seconds must be 0 or more, got -1"),
        ("--dedup_ttl_seconds=0", "--dedup_ttl_seconds must be positive"),
        ("--max_record_bytes=-5", "--max_record_bytes must be positive"),
        ("--catalog_refresh_seconds=0", "--catalog_refresh_seconds must be positive"),
        ("--catalog_cache_entries=0", "--catalog_cache_entries must be positive"),
    ],
)
def test_streaming_options_say_what_to_fix(tmp_path: Path, flag: str, message: str) -> None:
    catalog = tmp_path / "catalog.jsonl"
    _write(catalog, "support")
    args = [
        "--subscription=projects/p/subscriptions/requests",
        "--prompts_topic=projects/p/topics/prompts",
        "--dead_letter_topic=projects/p/topics/dead",
        "--bigquery_dataset=p.audit",
        f"--catalog={catalog}",
    ]
    assert resolve_streaming(PipelineOptions(args)).sinks.dataset == "p.audit"
    name = flag.split("=")[0]
    bad = [a for a in args if not a.startswith(name + "=")] + [flag]
    with pytest.raises(ValueError, match=message):
        resolve_streaming(PipelineOptions(bad))


@given(
    data=st.binary(max_size=300) | markup.map(lambda t: t.encode("utf-8", "surrogatepass")),
    attributes=st.dictionaries(
        markup | st.just("request_id"), markup | st.just("$5 to $10 {x} %s"), max_size=4
    ),
    reason=markup,
)
def test_a_refused_message_is_kept_whole_in_its_dead_letter(
    data: bytes, attributes: dict[str, str], reason: str
) -> None:
    letter = unpublished(PubsubMessage(data, attributes), reason, "projects/p/topics/t")
    kept = json.loads(DeadLetter.model_validate_json(letter.model_dump_json()).payload)
    assert kept["attributes"] == attributes
    assert kept["data"] == data.decode("utf-8", "backslashreplace")
    assert letter.stage == "publish" and letter.source == "projects/p/topics/t"
    named = attributes.get("request_id")
    assert letter.request_id == (named if is_identifier(named) else None)


def test_a_topic_wide_refusal_counter_names_its_topic_and_cause() -> None:
    topic = "projects/p-1/topics/a.b_c~d%e+f"
    assert unusable_topic(unusable_counter(topic, "NotFound")) == (topic, "NotFound")
    assert unusable_topic("prompts_delivered") is None
    assert failure_kind(NotFound("gone")) == "topic"
    assert failure_kind(PermissionDenied("no")) == "topic"
    assert failure_kind(InvalidArgument("too big")) == "message"
    assert failure_kind(ServiceUnavailable("down")) == "transient"
