"""The dashboard views on the BigQuery emulator, over the sample audit rows."""

from pathlib import Path

import pytest
from google.cloud import bigquery

from pipelines import tables
from pipelines.views import create_views, load_views
from schemas.tables import AUDIT_TABLES
from tests.audit_rows import EXPECTED, ROWS, assert_view_rows
from tests.conftest import EMULATOR_PROJECT
from transforms.io.bigquery import bigquery_client, create_tables, to_bigquery_row


def test_every_view_states_its_question_and_has_expectations() -> None:
    views = load_views()
    assert {v.name for v in views} == set(EXPECTED)
    for view in views:
        assert len(view.question) > 40, view.name
        assert view.tables, view.name
        for table in view.tables:  # through its current rows (or runs), never the table
            read = (f"${{{table}}}", f"${{run_{table}}}")
            assert any(r in view.sql for r in read) and "${dataset}" not in view.sql, view.name


def test_deploy_readme_lists_every_view() -> None:
    readme = (Path(__file__).resolve().parents[1] / "deploy" / "README.md").read_text(
        encoding="utf-8"
    )
    for view in load_views():
        assert f"| `{view.name}` |" in readme, view.name


def test_bigquery_sql_needs_a_qualified_dataset() -> None:
    view = load_views()[0]
    assert "`p.d.manifests`" in view.bigquery_sql("p.d")
    with pytest.raises(ValueError, match=r"project\.dataset"):
        view.bigquery_sql("d")


@pytest.fixture(scope="module")
def audit_dataset(gcp_emulators: object) -> tuple[bigquery.Client, str]:
    """The audit tables with the sample rows, and the views over them."""
    client = bigquery_client(EMULATOR_PROJECT)
    dataset = f"{EMULATOR_PROJECT}.views_test"
    create_tables(client, dataset)
    for table, records in ROWS.items():
        errors = client.insert_rows_json(
            f"{dataset}.{table}", [to_bigquery_row(r) for r in records]
        )
        assert errors == [], errors
    create_views(client, dataset)
    return client, dataset


@pytest.mark.emulators
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_view_returns_expected_aggregates(
    audit_dataset: tuple[bigquery.Client, str], name: str
) -> None:
    client, dataset = audit_dataset
    rows = client.query(f"SELECT * FROM `{dataset}.{name}`").result()
    assert_view_rows(name, [tuple(row.values()) for row in rows])


@pytest.mark.emulators
def test_create_views_is_idempotent(audit_dataset: tuple[bigquery.Client, str]) -> None:
    client, dataset = audit_dataset
    again = create_views(client, dataset)
    listed = {t.table_id for t in client.list_tables(dataset) if t.table_type == "VIEW"}
    assert listed == {view_id.rsplit(".", 1)[1] for view_id in again.created} == set(EXPECTED)
    assert again.skipped == {}


@pytest.mark.emulators
def test_a_view_over_a_missing_table_is_skipped_and_named(gcp_emulators: object) -> None:
    client = bigquery_client(EMULATOR_PROJECT)
    dataset = f"{EMULATOR_PROJECT}.views_without_dead_letters"
    create_tables(client, dataset, [t for n, t in AUDIT_TABLES.items() if n != "dead_letters"])
    done = create_views(client, dataset)
    readers = {"dead_letter_rate", "dead_letters_by_error"}
    assert done.skipped == {view: ["dead_letters"] for view in readers}
    assert len(done.created) == len(EXPECTED) - len(readers)


def test_each_view_reads_the_audit_tables_it_names() -> None:
    tables = {v.name: v.tables for v in load_views()}
    assert tables["dead_letter_rate"] == {"manifests", "dead_letters"}
    assert tables["exclusions_daily"] == {"exclusions"}
    assert tables["context_tokens_hourly"] == {"manifests"}


@pytest.mark.emulators
def test_evpack_tables_creates_the_views_with_the_tables(
    gcp_emulators: object, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = f"{EMULATOR_PROJECT}.tables_command"
    assert tables.main(["--dataset", dataset]) == 0
    out, err = capsys.readouterr()
    listed = {
        t.table_id: t.table_type for t in bigquery_client(EMULATOR_PROJECT).list_tables(dataset)
    }
    views = {name for name, kind in listed.items() if kind == "VIEW"}
    assert views == set(EXPECTED)
    assert {name for name, kind in listed.items() if kind == "TABLE"} == set(AUDIT_TABLES)
    assert all(f"{dataset}.{name}" in out.split() for name in views)
    assert "not created" not in err
