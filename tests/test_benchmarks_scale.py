"""The scale benchmark's parts, without timing anything: its data, its targets, its report."""

import json
from pathlib import Path

from benchmarks import scale
from schemas import CatalogDocument, Request
from transforms.catalog.join import line_key


def test_generated_catalog_lines_are_valid_documents_with_cheap_keys(tmp_path: Path) -> None:
    path = scale.write_catalog(tmp_path / "catalog.jsonl", 200)
    lines = path.read_bytes().splitlines()
    assert len(lines) == 200
    docs = [CatalogDocument.model_validate_json(line) for line in lines]
    assert [line_key(line) for line in lines] == [(d.tenant_id, d.document_id) for d in docs]
    assert any(d.deleted for d in docs) and any("finance" in d.allowed_groups for d in docs)
    assert scale.write_catalog(path, 5) == path and len(path.read_bytes().splitlines()) == 200


def test_generated_requests_cite_documents_of_their_own_tenant(tmp_path: Path) -> None:
    path = scale.write_requests(tmp_path / "requests.jsonl")
    requests = [Request.model_validate_json(line) for line in path.read_text().splitlines()]
    assert len(requests) == scale.REQUESTS
    for req in requests:
        assert len(req.candidates) == scale.PER_REQUEST
        tenant = int(req.tenant_id[1:])
        for cand in req.candidates:
            doc = int(cand.document_id[1:])
            assert doc >= 10**9 or (doc % scale.TENANTS == tenant and doc < scale.SHARED_DOCS)


def _row(docs: int, mode: str, wall: float, rss: float, digest: str = "abc") -> dict:
    return {"documents": docs, "mode": mode, "catalog_mb": 1.0, "wall_s": wall,
            "cpu_s": wall / 2, "peak_rss_gb": rss, "outputs": digest}  # fmt: skip


def test_targets_are_judged_from_the_rows() -> None:
    rows = [
        _row(10_000, "join", 10.0, 0.5),
        _row(1_000_000, "join", 45.0, 0.6),
        _row(5_000_000, "join", 90.0, 1.6),
        _row(10_000, "bigtable", 10.0, 0.4),
        _row(1_000_000, "bigtable", 11.0, 0.4, "other"),
        {"documents": 5_000_000, "mode": "side_input", "catalog_mb": 1.0, "skipped": "too big"},
    ]
    verdicts = {t["target"]: t["met"] for t in scale.targets(rows)}
    assert verdicts == {
        "join peak RSS at 1,000,000 ≤ 1.5 GB": True,
        "join peak RSS at 5,000,000 ≤ 1.5 GB": False,
        "join wall at 1M ≤ 4× the 10k run": False,
        "Bigtable job CPU time independent of catalog size (max/min ≤ 1.25)": True,
        "Bigtable peak RSS independent of catalog size (max/min ≤ 1.10)": True,
        "identical outputs across modes and sizes": False,
    }
    results = {
        "machine": {"date": "d", "commit": "c", "cores": 2, "cpu": "x"},
        "requests": 2000,
        "per_request": 10,
        "rows": rows,
        "targets": scale.targets(rows),
    }
    section = "\n".join(scale.report_section(json.loads(json.dumps(results))))
    assert "| 5,000,000 | 1.0 | side_input | skipped: too big |" in section
    assert "**missed**" in section and "scale.png" in section
