"""Hand-made audit rows with known aggregates, shared by the view and report tests.

Both engines (BigQuery through its emulator, DuckDB in the report) must return
`EXPECTED` for these rows: one expectation, two engines.
"""

from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pydantic import BaseModel

from schemas import (
    BudgetLedger,
    Conflict,
    DeadLetter,
    ExclusionReason,
    ExclusionRecord,
    ManifestEvidence,
    ManifestRow,
    ReasonCount,
)
from schemas.arrow import arrow_schema
from schemas.run import RunRecord
from schemas.tables import OUTPUTS
from schemas.verification import CheckResult, VerificationRow

DAY1_0905 = datetime(2026, 3, 1, 9, 5, tzinfo=UTC)
DAY1_0940 = datetime(2026, 3, 1, 9, 40, tzinfo=UTC)
DAY1_0950 = datetime(2026, 3, 1, 9, 50, tzinfo=UTC)
DAY1_0910 = datetime(2026, 3, 1, 9, 10, tzinfo=UTC)
DAY2_1000 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


def _manifest(
    request_id: str,
    tenant: str,
    at: datetime,
    prompt_tokens: int,
    used: int,
    available: int,
    uncovered: list[str],
    conflicts: int,
    excluded: dict[str, int],
) -> ManifestRow:
    return ManifestRow(
        request_id=request_id,
        tenant_id=tenant,
        event_time=at,
        as_of=at,
        builder_version="bv1",
        config_hash="cfg",
        model="gpt-4-turbo",
        tokenizer="cl100k_base",
        budget=BudgetLedger(
            input_limit=available + 1056,
            reserved_answer=1024,
            safety_margin=32,
            available=available,
            used=used,
            prompt_tokens=prompt_tokens,
        ),
        order_policy="relevance",
        candidates_in=1 + sum(excluded.values()),
        evidence=[
            ManifestEvidence(
                label="E1",
                evidence_id=f"{request_id}-e1",
                document_id="doc-1",
                revision_id="rev-1",
                chunk_id="c1",
                source_url="https://docs.example/doc-1",
                tokens=used,
                facets=[],
                derived_from=[],
            )
        ],
        uncovered_facets=uncovered,
        conflicts=[
            Conflict(evidence_ids=[f"x{i}", f"y{i}"], labels=["E1", "E2"]) for i in range(conflicts)
        ],
        excluded=[ReasonCount(reason=r, count=n) for r, n in sorted(excluded.items())],
        prompt_sha256="0" * 64,
        catalog_version="v1",
    )


MANIFESTS = [
    _manifest("a1", "acme", DAY1_0905, 100, 60, 200, [], 0, {"over_budget": 2}),
    _manifest(
        "a2",
        "acme",
        DAY1_0940,
        300,
        200,
        200,
        ["pricing"],
        1,
        {"over_budget": 1, "unauthorized": 1},
    ),
    _manifest("a3", "acme", DAY1_0950, 200, 100, 200, [], 0, {}),
    _manifest("a4", "acme", DAY2_1000, 150, 50, 100, ["sla", "region"], 2, {"superseded": 2}),
    _manifest("g1", "globex", DAY1_0910, 400, 300, 400, [], 0, {"duplicate_exact": 1}),
]


def _exclusions(manifest: ManifestRow) -> list[ExclusionRecord]:
    return [
        ExclusionRecord(
            request_id=manifest.request_id,
            tenant_id=manifest.tenant_id,
            event_time=manifest.event_time,
            evidence_id=f"{manifest.request_id}-{item.reason}-{k}",
            document_id="doc-9",
            revision_id="rev-1",
            reason=ExclusionReason(item.reason),
            detail="sample",
            builder_version=manifest.builder_version,
        )
        for item in manifest.excluded
        for k in range(item.count)
    ]


EXCLUSIONS = [row for m in MANIFESTS for row in _exclusions(m)]

DEAD_LETTERS = [
    DeadLetter(
        stage="parse",
        error="not JSON",
        payload="{",
        source="in.jsonl",
        request_id=None,
        builder_version="bv1",
    ),
    DeadLetter(
        stage="validate",
        error="candidates: too short",
        payload="{}",
        source="in.jsonl",
        request_id="z9",
        builder_version="bv0",
    ),
]


def _verification(
    request_id: str | None, tenant: str | None, at: datetime | None, status: str, failed: list[str]
) -> VerificationRow:
    checked = status == "succeeded"
    return VerificationRow(
        request_id=request_id,
        answer_key=request_id or "unknown",
        tenant_id=tenant,
        event_time=at,
        verified_at=DAY2_1000,
        answer_format="anthropic_batch",
        status=status,  # type: ignore[arg-type]
        error=None if checked else status,
        passed=(not failed) if checked else None,
        sentences=2 if checked else 0,
        cited_sentences=1 if checked else 0,
        labels_cited=["E1"] if checked else [],
        checks=[
            CheckResult(name=name, outcome="fail", offending=["x"], sentences=["s"], detail="d")
            for name in failed
        ],
        failed_checks=failed,
        builder_version="bv1",
        config_hash="cfg",
    )


VERIFICATIONS = [
    _verification("a1", "acme", DAY1_0905, "succeeded", []),
    _verification("a2", "acme", DAY1_0940, "succeeded", ["labels_exist", "figures_supported"]),
    _verification("a3", "acme", DAY1_0950, "errored", []),
    _verification("a4", "acme", DAY2_1000, "succeeded", ["no_excluded_text"]),
    _verification("g1", "globex", DAY1_0910, "succeeded", ["no_leaked_ids", "no_excluded_text"]),
    _verification("t1", "acme", DAY2_1000, "truncated", []),
    _verification(None, None, None, "unknown_request", []),
]

LATEST_RUN = "20260302T000000-11111111"
EARLIER_RUN = "20260301T000000-00000000"


def _runs(rows: list[BaseModel]) -> list[BaseModel]:
    """`rows` as the latest run wrote them, beside copies an earlier run (another job
    packing the same requests) and a version before run ids wrote: the views must count
    each request once, so the copies change no expected figure."""
    return [
        row.model_copy(update={"run_id": run})
        for run in (LATEST_RUN, EARLIER_RUN, None)
        for row in rows
    ]


def _record(run_id: str, job: str) -> RunRecord:
    return RunRecord(
        builder_version="bv1",
        config_hash="cfg",
        prompt_format="anthropic_batch",
        model="claude",
        input="in.jsonl",
        input_format="jsonl",
        input_shape="nested",
        catalog="catalog.jsonl",
        catalog_mode="side_input",
        event_time=DAY1_0905,
        run_id=run_id,
        job=job,
        run_key=job,
    )


RUNS = [_record(LATEST_RUN, "nightly"), _record(EARLIER_RUN, "other")]
"""The records of the two runs: the latest of job `nightly`, the earlier of another job."""

AUDIT_ROWS: dict[str, list[BaseModel]] = {
    "manifests": MANIFESTS,
    "exclusions": EXCLUSIONS,
    "dead_letters": DEAD_LETTERS,
    "verifications": VERIFICATIONS,
}

ONE_RUN: dict[str, list[BaseModel]] = {
    **{
        t: [r.model_copy(update={"run_id": LATEST_RUN}) for r in rows]
        for t, rows in AUDIT_ROWS.items()
    },
    "runs": RUNS[:1],
}
"""The rows as one run's folder holds them (the report's page reads one run)."""

ROWS: dict[str, list[BaseModel]] = {
    **{table: _runs(rows) for table, rows in AUDIT_ROWS.items()},
    "runs": list(RUNS),
}
"""The rows with the copies of other runs, as a dataset may hold them: what the views read."""

H9 = datetime(2026, 3, 1, 9, tzinfo=UTC)
H10 = datetime(2026, 3, 2, 10, tzinfo=UTC)
D1, D2 = DAY1_0905.date(), DAY2_1000.date()

EXPECTED: dict[str, list[tuple]] = {
    "context_tokens_hourly": [
        (H9, "acme", 3, 200, 300, 100, 200),
        (H9, "globex", 1, 400, 400, 300, 300),
        (H10, "acme", 1, 150, 150, 50, 50),
    ],
    "exclusions_daily": [
        (D1, "acme", "over_budget", 3),
        (D1, "acme", "unauthorized", 1),
        (D1, "globex", "duplicate_exact", 1),
        (D2, "acme", "superseded", 2),
    ],
    "facet_coverage_daily": [
        (D1, "acme", 3, 1, 1 / 3),
        (D1, "globex", 1, 0, 0.0),
        (D2, "acme", 1, 1, 1.0),
    ],
    "conflicts_daily": [
        (D1, "acme", 3, 1, 1),
        (D1, "globex", 1, 0, 0),
        (D2, "acme", 1, 1, 2),
    ],
    "budget_utilization_daily": [
        (D1, "acme", 3, 0.6, 1.0, 2),
        (D1, "globex", 1, 0.75, 0.75, 0),
        (D2, "acme", 1, 0.5, 0.5, 0),
    ],
    "dead_letter_rate": [
        ("bv0", 0, 1, 1.0),
        ("bv1", 5, 1, 1 / 6),
    ],
    "dead_letters_by_error": [
        ("parse", "not JSON", 1, "not JSON", "in.jsonl", None),
        ("validate", "candidates: too short", 1, "candidates: too short", "in.jsonl", "z9"),
    ],
    "verification_checks": [
        ("figures_supported", 1, 0, 1, 0),
        ("labels_exist", 1, 0, 1, 0),
        ("no_excluded_text", 2, 0, 2, 0),
        ("no_leaked_ids", 1, 0, 1, 0),
    ],
    "job_runs_daily": [
        ("nightly", D2, "", 1, 5, 4, 1, 0.25),
        ("other", D1, "", 1, 5, 4, 1, 0.25),
    ],
    "verification_daily": [
        (None, None, 1, 0, 0, None, 0, 0, 0, 0, 1),  # an answer to no request: not the API's
        (D1, "acme", 3, 2, 1, 0.5, 1, 0, 1, 0, 0),
        (D1, "globex", 1, 1, 0, 1.0, 0, 1, 0, 0, 0),
        (D2, "acme", 2, 1, 0, 1.0, 0, 1, 0, 1, 0),
    ],
}
"""Each view's rows for `ROWS`, sorted by every column."""


def write_audit(directory: Path, rows: dict[str, list[BaseModel]] = ONE_RUN) -> Path:
    """Write `rows` in the batch output layout: Parquet audit tables, JSONL dead letters and
    run records."""
    for table, records in rows.items():
        folder = directory / table
        folder.mkdir(parents=True, exist_ok=True)
        if OUTPUTS[table].file_type == "jsonl":
            lines = "".join(r.model_dump_json() + "\n" for r in records)
            (folder / f"{table}-00000-of-00001.jsonl").write_text(lines, encoding="utf-8")
            continue
        schema = arrow_schema(type(records[0]))
        data = pa.Table.from_pylist([r.model_dump() for r in records], schema=schema)
        pq.write_table(data, folder / f"{table}-00000-of-00001.parquet")
    return directory


def _nulls_first(row: tuple) -> tuple:
    """A row's sort key: a null before any value (an answer to no request has no day)."""
    return tuple((value is not None, value) for value in row)


def assert_view_rows(name: str, rows: list[tuple]) -> None:
    """The rows of view `name` equal `EXPECTED` (floats to 1e-9), whatever their order."""
    got = sorted(rows, key=_nulls_first)
    expected = sorted(EXPECTED[name], key=_nulls_first)
    assert len(got) == len(expected), (name, got)
    for got_row, want_row in zip(got, expected, strict=True):
        assert len(got_row) == len(want_row), (name, got_row)
        for value, want in zip(got_row, want_row, strict=True):
            if isinstance(want, float):
                assert value == pytest.approx(want, abs=1e-9), (name, got_row)
            else:
                assert value == want, (name, got_row)
