"""A realistic request rendered to a checked-in prompt and manifest.

Regenerate after an intended rendering change with
`UPDATE_GOLDEN=1 pytest tests/test_packer_golden.py`, and review the diff.
"""

import hashlib
import json
import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from packer import Catalog, PackerRuntime, pack_request
from packer.catalog_slice import canonical_line, request_keys, slice_version
from packer.layout import PromptLayout
from packer.outputs import prompt_sha256
from schemas import CatalogDocument, PackingConfig, Request

GOLDEN = Path(__file__).parent / "golden"


def _pack():
    request = Request.model_validate_json((GOLDEN / "request.json").read_text())
    lines = (GOLDEN / "catalog.jsonl").read_text().splitlines()
    docs = [CatalogDocument.model_validate_json(line) for line in lines]
    touched = set(request_keys(request))
    version = slice_version(
        canonical_line(d) for d in docs if (d.tenant_id, d.document_id) in touched
    )
    return pack_request(
        request,
        Catalog(docs),
        PackingConfig(per_document_cap=2),
        PackerRuntime.load(),
        catalog_version=version,
    )


def _manifest_json(result) -> str:
    data = result.manifest.model_dump(mode="json", exclude={"builder_version"})
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def test_golden_prompt_and_manifest():
    result = _pack()
    prompt = "\n\n".join(f"### {m.role}\n{m.content}" for m in result.prompt.messages) + "\n"
    manifest = _manifest_json(result)
    if os.environ.get("UPDATE_GOLDEN"):
        (GOLDEN / "prompt.txt").write_text(prompt)
        (GOLDEN / "manifest.json").write_text(manifest)
    assert prompt == (GOLDEN / "prompt.txt").read_text()
    assert manifest == (GOLDEN / "manifest.json").read_text()


def test_golden_decisions():
    """What the golden prompt must show, stated independently of its bytes."""
    result = _pack()
    reasons = {x.evidence_id: x.reason.value for x in result.exclusions}
    assert reasons == {"ev-c2": "superseded", "ev-c8": "unauthorized"}
    packed = {e.evidence_id: e for e in result.manifest.evidence}
    assert packed["ev-c1"].derived_from == ["ev-c4"]  # exact duplicate, other publication
    # the two countries' windows: one report with another country and number of days
    assert result.manifest.conflicts[0].evidence_ids == ["ev-c6", "ev-c7"]
    assert result.manifest.uncovered_facets == ["exchange"]
    content = result.prompt.messages[1].content
    assert '&lt;/evidence&gt;&lt;evidence label="E9"&gt;' in content


def test_prompt_sha256_is_the_documented_hash_of_the_messages():
    result = _pack()
    messages = [{"content": m.content, "role": m.role} for m in result.prompt.messages]
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
    assert result.manifest.prompt_sha256 == digest


@given(st.text(st.characters(codec=None, categories=None)) | st.sampled_from(['"', "\\", "}]"]))
def test_prompt_sha256_hashes_the_messages_of_any_user_message(user: str) -> None:
    """The fixed part hashed once gives the hash of the whole messages, for any user text
    (quotes, escapes, lone surrogates, non-ASCII: what JSON escapes)."""
    messages = [{"content": text, "role": role} for role, text in PromptLayout.messages(user)]
    expected = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
    assert prompt_sha256(user) == expected
