"""The BigQuery sink and table creation, against the real BigQuery emulator."""

from datetime import UTC, datetime

import apache_beam as beam
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that, equal_to
from google.api_core import exceptions as api_exceptions
from google.cloud import bigquery

from pipelines import cli
from schemas import ExclusionRecord, ManifestRow
from schemas.bigquery import bigquery_schema
from schemas.tables import AUDIT_TABLES
from transforms.io.bigquery import (
    DEAD_LETTER_STAGE,
    RecentRequestIds,
    WriteToBigQueryRows,
    bigquery_client,
    create_tables,
    is_transient,
)

pytestmark = pytest.mark.emulators


def _exclusion(i: int) -> ExclusionRecord:
    return ExclusionRecord(
        request_id=f"r{i}",
        tenant_id=f"t{i % 2}",
        event_time=datetime(2026, 3, 1, 12, i, tzinfo=UTC),
        evidence_id=f"e{i}",
        document_id=None,
        revision_id=None,
        reason="unauthorized",
        detail="group not granted",
        builder_version="b",
    )


def test_create_tables_derives_schema_partitioning_and_clustering(gcp_emulators) -> None:
    client = bigquery_client(gcp_emulators.project)
    ids = create_tables(client, "audit_create")
    assert create_tables(client, "audit_create") == ids  # idempotent
    for table_id, spec in zip(ids, AUDIT_TABLES.values(), strict=True):
        table = client.get_table(table_id)
        assert [f.to_api_repr()["name"] for f in table.schema] == [
            f["name"] for f in bigquery_schema(spec.model)
        ]
        assert table.time_partitioning.field == spec.partition_field
        assert table.clustering_fields == list(spec.cluster_fields)


def test_sink_writes_rows_that_read_back_equal(gcp_emulators) -> None:
    client = bigquery_client(gcp_emulators.project)
    create_tables(client, "audit_sink", [AUDIT_TABLES["exclusions"]])
    table_id = f"{gcp_emulators.project}.audit_sink.exclusions"
    records = [_exclusion(i) for i in range(7)]
    with beam.Pipeline(runner=FnApiRunner()) as p:
        letters = (
            p
            | beam.Create(records)
            | WriteToBigQueryRows(table_id, row_id=lambda r: r["evidence_id"], batch_size=3)
        )
        assert_that(letters, equal_to([]))
    rows = client.query(f"SELECT * FROM `{table_id}`").result()
    read_back = sorted((ExclusionRecord.model_validate(dict(r)) for r in rows), key=str)
    assert read_back == sorted(records, key=str)


def test_permanent_error_becomes_dead_letters_not_a_failure(gcp_emulators) -> None:
    missing = f"{gcp_emulators.project}.audit_sink_missing.nowhere"
    with beam.Pipeline(runner=FnApiRunner()) as p:
        letters = p | beam.Create([_exclusion(1), _exclusion(2)]) | WriteToBigQueryRows(missing)
        assert_that(
            letters | beam.Map(lambda d: (d.stage, d.source, d.request_id)),
            equal_to([(DEAD_LETTER_STAGE, missing, "r1"), (DEAD_LETTER_STAGE, missing, "r2")]),
        )


def test_a_manifests_table_dropped_mid_stream_remembers_nothing_in_one_warning(
    gcp_emulators, caplog
) -> None:
    dataset = f"{gcp_emulators.project}.audit_dropped"
    client = bigquery_client(gcp_emulators.project)
    create_tables(client, dataset, [AUDIT_TABLES["manifests"]])
    recent = RecentRequestIds(f"{dataset}.manifests", 3600)
    assert recent() == frozenset()  # there, and empty
    client.delete_table(f"{dataset}.manifests")
    with pytest.raises(api_exceptions.NotFound):
        client.get_table(f"{dataset}.manifests")
    assert recent() == frozenset()
    gone = [r.getMessage() for r in caplog.records if "is gone" in r.getMessage()]
    assert len(gone) == 1 and f"{dataset}.manifests" in gone[0], gone


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (api_exceptions.ServiceUnavailable("x"), True),
        (api_exceptions.TooManyRequests("x"), True),
        (ConnectionError("reset"), True),
        (api_exceptions.from_http_status(408, "request timeout"), True),
        (api_exceptions.BadRequest("x"), False),
        (api_exceptions.NotFound("x"), False),
        (api_exceptions.Forbidden("x"), False),
    ],
)
def test_error_classification(error: Exception, transient: bool) -> None:
    assert is_transient(error) is transient


def test_sink_rejects_a_bare_table_name() -> None:
    with pytest.raises(ValueError, match=r"project\.dataset\.table"):
        WriteToBigQueryRows("exclusions")


def test_tables_command_creates_the_chosen_tables(gcp_emulators, capsys) -> None:
    dataset = f"{gcp_emulators.project}.audit_cli"
    assert cli.main(["tables", "--dataset", dataset, "--table", "manifests"]) == 0
    printed = capsys.readouterr().out.split()
    assert f"{dataset}.manifests" in printed
    assert f"{dataset}.exclusions" not in printed  # only the chosen table
    table = bigquery_client(gcp_emulators.project).get_table(f"{dataset}.manifests")
    assert [f.name for f in table.schema] == [f["name"] for f in bigquery_schema(ManifestRow)]


def _older(schema: list[dict], dropped: set[str], prefix: str = "") -> list[dict]:
    """`schema` without the `dropped` dotted paths: a table an older version made."""
    out = []
    for field in schema:
        path = prefix + field["name"]
        if path in dropped:
            continue
        kept = dict(field)
        if "fields" in field:
            kept["fields"] = _older(field["fields"], dropped, path + ".")
        out.append(kept)
    return out


def test_tables_command_adds_the_columns_an_older_table_lacks(gcp_emulators, capsys) -> None:
    """A table an older version made gains this version's columns in place (top-level, a
    record, a record's field), once: a second run finds it up to date."""
    client = bigquery_client(gcp_emulators.project)
    dataset = f"{gcp_emulators.project}.audit_older"
    client.create_dataset(dataset)
    old = _older(
        bigquery_schema(ManifestRow), {"catalog_version", "resolutions", "evidence.partial"}
    )
    client.create_table(
        bigquery.Table(
            f"{dataset}.manifests", schema=[bigquery.SchemaField.from_api_repr(f) for f in old]
        )
    )
    assert cli.main(["tables", "--dataset", dataset, "--table", "manifests"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"{dataset}.manifests (added evidence.partial, resolutions, catalog_version)"
    )
    table = client.get_table(f"{dataset}.manifests")
    assert {f.name for f in table.schema} == {f["name"] for f in bigquery_schema(ManifestRow)}
    [evidence] = [f for f in table.schema if f.name == "evidence"]
    assert "partial" in {f.name for f in evidence.fields}
    assert cli.main(["tables", "--dataset", dataset, "--table", "manifests"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"{dataset}.manifests"


def test_tables_command_refuses_a_column_of_another_type_naming_it(gcp_emulators, capsys) -> None:
    client = bigquery_client(gcp_emulators.project)
    dataset = f"{gcp_emulators.project}.audit_clash"
    client.create_dataset(dataset)
    schema = [
        dict(f, type="INTEGER") if f["name"] == "reason" else f
        for f in bigquery_schema(ExclusionRecord)
    ]
    client.create_table(
        bigquery.Table(
            f"{dataset}.exclusions", schema=[bigquery.SchemaField.from_api_repr(f) for f in schema]
        )
    )
    assert cli.main(["tables", "--dataset", dataset, "--table", "exclusions"]) != 0
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1
    assert "reason is REQUIRED INTEGER in the table, REQUIRED STRING here" in error
