"""The samples are what their generator writes, and carry every case they promise."""

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.batch_run import SAMPLES, input_lines

FILES = ("requests.jsonl", "requests_flat.jsonl", "catalog.jsonl")


def test_generator_rewrites_the_committed_files_byte_for_byte(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(SAMPLES / "generate.py"), str(tmp_path)], check=True)
    for name in FILES:
        assert (tmp_path / name).read_bytes() == (SAMPLES / name).read_bytes(), name


def test_samples_cover_the_promised_cases() -> None:
    lines = input_lines(SAMPLES / "requests.jsonl")
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    requests = [r for r in records if isinstance(r, dict) and r.get("candidates")]
    candidates = [c for r in requests for c in r["candidates"]]
    catalog = [json.loads(line) for line in input_lines(SAMPLES / "catalog.jsonl")]

    assert {r["tenant_id"] for r in requests} == {"acme", "globex"}
    assert len(records) < len(lines)  # a line that is not JSON
    ids = [r["request_id"] for r in requests]
    assert len(ids) > len(set(ids))  # a duplicate request_id
    assert any(not r.get("candidates") for r in records if isinstance(r, dict))
    assert any(d["deleted"] for d in catalog)
    assert any(d["sensitivity"] == "confidential" for d in catalog)
    revisions = [rev for d in catalog for rev in d["revisions"]]
    assert any(rev["supersedes"] for rev in revisions)
    assert any(rev["effective_at"] > "2026-11-01" for rev in revisions)  # a future revision
    assert all(d["allowed_groups"] for d in catalog)
    assert any("</evidence>" in c["text"] for c in candidates)
    assert any(c["tenant_id"] != r["tenant_id"] for r in requests for c in r["candidates"])
    texts = [c["text"] for c in candidates]
    assert len(texts) > len(set(texts))  # exact duplicates
    assert any(c["chunk_id"] is None and c["span"] for c in candidates)  # overlapping span
    assert any("14 days of purchase" in t for t in texts)
    assert any("30 days of purchase. Annual" in t for t in texts)  # the conflict pair


def test_the_sample_configs_pointers_lead_somewhere() -> None:
    """samples/config.yaml names the pages that explain it; each exists."""
    root = Path(__file__).resolve().parents[1]
    text = (root / "samples" / "config.yaml").read_text(encoding="utf-8")
    pages = re.findall(r"\b(docs/[\w-]+\.md|README\.md|ARCHITECTURE\.md)", text)
    assert pages
    for page in pages:
        assert (root / page).is_file(), page
    assert 'README, "' not in text  # a README section by name: sections move
