"""The five invariants of ARCHITECTURE.md as properties over random catalogs and requests.

Profiles (`ci`, `thorough`, `dev`) are registered in `tests/conftest.py`.
"""

import hashlib
import html
import re

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from packer import Catalog, PackerRuntime, pack_request
from packer.units import complete, sentence_spans
from schemas import PackingConfig
from schemas._types import SENSITIVITY_LEVELS
from tests.factories import encoded_prompt_tokens
from tests.strategies import catalog_documents, requests

_COMMON = {"deadline": None, "suppress_health_check": list(HealthCheck), "derandomize": True}

RUNTIME = PackerRuntime.load()
OTHER_WORKER = PackerRuntime.load()  # a second worker: its own tokenizer, cold memos

configs = st.builds(
    PackingConfig,
    input_limit=st.integers(800, 3000),
    reserved_answer=st.integers(0, 300),
    safety_margin=st.integers(0, 20),
    order_policy=st.sampled_from(["relevance", "edges", "best_last", "chronological"]),
    per_document_cap=st.integers(1, 3),
    enable_dedup=st.booleans(),
    enable_facet_coverage=st.booleans(),
    enable_document_cap=st.booleans(),
    enable_subject_links=st.booleans(),
    enable_source_links=st.booleans(),
    enable_calibrated_relevance=st.booleans(),
    enable_term_stems=st.booleans(),
    enable_pairs_first=st.booleans(),
    enable_sides_first=st.booleans(),
    enable_answers_first=st.booleans(),
    enable_full_names=st.booleans(),
)


def _ids(result) -> list[str]:
    packed = [e.evidence_id for e in result.manifest.evidence]
    folded = [f for e in result.manifest.evidence for f in e.derived_from]
    return packed + folded + [x.evidence_id for x in result.exclusions]


@given(docs=catalog_documents(), request=requests(), config=configs)
def test_conservation(docs, request, config):
    result = pack_request(request, Catalog(docs), config, RUNTIME)
    ids = _ids(result)
    assert sorted(ids) == sorted(c.evidence_id for c in request.candidates)
    assert result.manifest.candidates_in == len(request.candidates)
    assert sum(r.count for r in result.manifest.excluded) == len(result.exclusions)


def _authorized(request, catalog, candidate) -> bool:
    doc = catalog.get(request.tenant_id, candidate.document_id)
    p = request.principal
    return (
        candidate.tenant_id in (None, request.tenant_id)
        and doc is not None
        and not doc.deleted
        and (p.user_id in doc.allowed_users or bool(set(p.groups) & set(doc.allowed_groups)))
        and all(
            SENSITIVITY_LEVELS.index(s) <= SENSITIVITY_LEVELS.index(p.clearance)
            for s in (doc.sensitivity, candidate.sensitivity)
            if s is not None
        )
    )


@given(docs=catalog_documents(), request=requests(), config=configs)
def test_isolation(docs, request, config):
    catalog = Catalog(docs)
    result = pack_request(request, catalog, config, RUNTIME)
    by_id = {c.evidence_id: c for c in request.candidates}
    reached = {e.evidence_id for e in result.manifest.evidence}
    reached |= {f for e in result.manifest.evidence for f in e.derived_from}
    reached |= {x.evidence_id for x in result.prompt.label_map}
    for evidence_id in reached:
        assert _authorized(request, catalog, by_id[evidence_id]), evidence_id
    assert result.manifest.tenant_id == result.prompt.tenant_id == request.tenant_id
    assert {x.tenant_id for x in result.exclusions} <= {request.tenant_id}
    content = result.prompt.messages[1].content
    for c in request.candidates:
        marker = f"marker-{c.evidence_id}"
        if marker in c.text and not _authorized(request, catalog, c):
            assert marker not in content


@given(docs=catalog_documents(), request=requests(), config=configs)
def test_budget(docs, request, config):
    result = pack_request(request, Catalog(docs), config, RUNTIME)
    exact = encoded_prompt_tokens(RUNTIME.tokens.encoding, result.prompt.messages)
    ledger = result.manifest.budget
    assert exact == result.prompt.prompt_tokens == ledger.prompt_tokens
    assert exact + ledger.reserved_answer <= ledger.input_limit
    assert ledger.used <= ledger.available  # notes included, for any number of facets


@given(docs=catalog_documents(), request=requests(), config=configs, data=st.data())
def test_determinism_under_shuffled_candidates(docs, request, config, data):
    shuffled = data.draw(st.permutations(request.candidates))
    other = request.model_copy(update={"candidates": tuple(shuffled)})
    first = pack_request(request, Catalog(docs), config, RUNTIME)
    second = pack_request(other, Catalog(list(reversed(docs))), config, OTHER_WORKER)
    assert first.prompt.model_dump_json() == second.prompt.model_dump_json()
    assert first.manifest.model_dump_json() == second.manifest.model_dump_json()
    assert [x.model_dump_json() for x in first.exclusions] == [
        x.model_dump_json() for x in second.exclusions
    ]


BLOCK = re.compile(r"<(E\d+)((?: [^\n]*)?)>\n(?:(.*?)\n)?</\1>\n", re.DOTALL)
LINE_BLOCK = re.compile(r"<(E\d+)((?: [^\n]*)?)>\n(?:([^<\n][^\n]*)\n)?")
"""A block of the compact framing (a tight budget): its label line and one line of text."""
LINE_STARTS = ("<E", "</E", "Conflicting evidence: ", "Required facets ")


@given(docs=catalog_documents(), request=requests(), config=configs)
def test_evidence_is_data(docs, request, config):
    result = pack_request(request, Catalog(docs), config, RUNTIME)
    content = result.prompt.messages[1].content
    compact = "</E" not in content  # escaped, no evidence or request string can write it
    pattern = LINE_BLOCK if compact else BLOCK
    blocks = pattern.findall(content)
    assert [b[0] for b in blocks] == [e.label for e in result.manifest.evidence]
    assert content.count("<E") == len(blocks)
    assert content.count("</E") == (0 if compact else len(blocks))
    flat = (lambda t: " ".join(t.split())) if compact else str.strip  # compact: one line
    by_id = {c.evidence_id: c for c in request.candidates}
    for (_, _, body), evidence in zip(blocks, result.manifest.evidence, strict=True):
        assert "<" not in body and ">" not in body
        shown = html.unescape(body)
        cand = by_id[evidence.evidence_id]
        merged = (
            any(by_id[f].span is not None for f in evidence.derived_from) and cand.span is not None
        )
        if evidence.partial and compact:  # whole sentences of the candidate, on one line
            assert shown in flat(cand.text)
        elif evidence.partial:  # whole sentences of the candidate, hashed as shown
            assert shown in cand.text and hashlib.sha256(shown.encode()).hexdigest() == (
                evidence.text_sha256
            )
            assert all(complete(shown[a:b]) for a, b in sentence_spans(shown))
        elif not merged:  # never truncated: the whole text is there, escaped
            assert shown == flat(cand.text)
    # every line outside the blocks is one the layout wrote: request strings cannot forge one
    outside = pattern.sub("", content).split("\n")
    assert all(
        line.startswith(LINE_STARTS) or line.startswith("No evidence") for line in outside[:-1]
    )
    question = outside[-1].removeprefix("Question: ")
    assert html.unescape(question) == " ".join(request.question.split())


def test_strategies_reach_every_rule():
    """The generated worlds hit every gate, folding, conflicts and the budget, so the
    properties above are not vacuous."""
    seen: set[str] = set()
    expected = {
        "unauthorized", "other_tenant", "unknown_document", "deleted", "superseded",
        "not_yet_effective", "missing_provenance", "hash_mismatch", "policy_blocked",
        "per_document_cap", "over_budget", "folded", "conflict",
    }  # fmt: skip

    # Hypothesis mixes literals found in the project's modules into what it draws, so
    # any new constant shifts one seeded sequence: up to four fixed seeds of 1,000
    # examples each, stopping once every rule was reached (deterministic either way).
    for round_seed in range(4):

        @seed(round_seed)
        @settings(max_examples=1000, **{**_COMMON, "derandomize": False, "database": None})
        @given(docs=catalog_documents(), request=requests(), config=configs)
        def collect(docs, request, config):
            result = pack_request(request, Catalog(docs), config, RUNTIME)
            seen.update(x.reason.value for x in result.exclusions)
            if any(e.derived_from for e in result.manifest.evidence):
                seen.add("folded")
            if result.manifest.conflicts:
                seen.add("conflict")

        collect()
        if expected <= seen:
            break
    assert expected <= seen, expected - seen
