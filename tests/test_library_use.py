"""The library-use example (docs/library.md) runs as written, and packs what the batch job packs.

The example is read out of docs/library.md (its one fenced Python block; the
README links there) and executed from the repository root, so the page cannot drift from the code.
"""

import contextlib
import io
import os
import re
from datetime import UTC, datetime
from pathlib import Path

from packer import Catalog, PackerRuntime, pack_request
from schemas import CatalogDocument, PackingConfig, Request

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "library.md"


def library_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1, "the page holds one Python example"
    return blocks[0]


def test_the_library_example_runs_and_packs_as_the_core_packer_does() -> None:
    printed = io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(library_example(), str(PAGE), "exec"), {"__name__": "example"})
    finally:
        os.chdir(cwd)
    rows = sorted(eval(line) for line in printed.getvalue().splitlines())
    requests = []
    for line in (ROOT / "samples/requests.jsonl").read_text().splitlines():
        with contextlib.suppress(ValueError):
            requests.append(Request.model_validate_json(line))
    documents = [
        CatalogDocument.model_validate_json(line)
        for line in (ROOT / "samples/catalog.jsonl").read_text().splitlines()
    ]
    assert len(rows) == len(requests) > 0
    config = PackingConfig(max_evidence_tokens=600)
    runtime, catalog = PackerRuntime.load(), Catalog(documents)
    expected = []
    for request in requests:
        if request.as_of is None and request.event_time is None:
            request = request.model_copy(update={"event_time": datetime(2026, 11, 1, tzinfo=UTC)})
        manifest = pack_request(request, catalog, config, runtime).manifest
        expected.append(
            (manifest.request_id, len(manifest.evidence), manifest.budget.prompt_tokens)
        )
    assert rows == sorted(expected)
    assert any(n > 0 for _, n, _ in rows)
