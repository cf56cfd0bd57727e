"""Generate the sample data set: requests, catalog and their flat form.

Deterministic (a fixed seed, no clock): running it again rewrites the same bytes,
which a test checks. Run from the repository root:

    python samples/generate.py [OUT_DIR]

Two tenants (acme: software support, globex: logistics) with group ACLs; documents
with superseded and future revisions, a deleted document, a confidential one;
exact and overlapping duplicates, a conflict pair (the same passage in two
documents with different numbers), evidence text that tries prompt injection,
a candidate of the other tenant, an unknown document, a hash mismatch, a missing
provenance field, an oversized passage, and malformed request lines.
"""

import hashlib
import json
import random
import sys
from pathlib import Path

from corpus import AS_OF, CONFLICT, DOCUMENTS, PRINCIPALS, QUESTIONS

HERE = Path(__file__).resolve().parent
SEED = 20261130

ACCESS = {
    p["user_id"]: {d[1] for d in DOCUMENTS if d[0] == tenant and set(d[2]) & set(p["groups"])}
    for tenant, people in PRINCIPALS.items()
    for p in people
}


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def catalog_rows() -> list[dict]:
    rows = []
    for tenant, doc, groups, sensitivity, deleted, revisions in DOCUMENTS:
        rows.append(
            {
                "tenant_id": tenant,
                "document_id": doc,
                "allowed_users": [],
                "allowed_groups": groups,
                "deleted": deleted,
                "sensitivity": sensitivity,
                "revisions": [
                    {"revision_id": rid, "effective_at": at, "supersedes": sup}
                    for rid, at, sup, _ in revisions
                ],
            }
        )
    return rows


def chunks() -> dict[str, list[dict]]:
    """Every paragraph of every revision as a candidate with real span offsets."""
    by_tenant: dict[str, list[dict]] = {"acme": [], "globex": []}
    for tenant, doc, _, _, _, revisions in DOCUMENTS:
        for rid, at, _, paragraphs in revisions:
            offset = 0
            for n, (facets, text) in enumerate(paragraphs):
                by_tenant[tenant].append(
                    {
                        "tenant_id": tenant,
                        "document_id": doc,
                        "revision_id": rid,
                        "chunk_id": f"{doc}/{rid}/{n}",
                        "source_url": f"https://docs.{tenant}.example/{doc}?rev={rid}#p{n}",
                        "title": doc.replace("-", " ").title(),
                        "section": f"Part {n + 1}",
                        "effective_at": at,
                        "span": {"start": offset, "end": offset + len(text)},
                        "text": text,
                        "text_sha256": sha256(text),
                        "query_facets": facets,
                    }
                )
                offset += len(text) + 2
    return by_tenant


def _candidate(chunk: dict, evidence_id: str, rng: random.Random, facets: list[str]) -> dict:
    score = round(rng.uniform(0.35, 0.95), 3)
    relevant = sorted(set(chunk["query_facets"]) & set(facets))
    return {
        **chunk,
        "evidence_id": evidence_id,
        "retrieval_score": score,
        "rerank_score": round(score + (0.1 if relevant else -0.2), 3),
        "query_facets": relevant,
    }


def _current(chunk: dict) -> bool:
    """Whether the chunk's revision applies at AS_OF in a live document."""
    for tenant, doc, _, _, deleted, revisions in DOCUMENTS:
        if (tenant, doc) == (chunk["tenant_id"], chunk["document_id"]):
            applicable = [rid for rid, at, _, _ in revisions if at <= AS_OF][-1]
            return not deleted and chunk["revision_id"] == applicable
    return False


def _specials(
    tenant: str, n: int, allowed: list[dict], pool: dict[str, list[dict]], rng: random.Random
) -> list[dict]:
    """Edge-case candidates built on a passage the principal may read, one kind in rotation."""
    base = rng.choice([c for c in allowed if _current(c)])
    kind = n % 6
    if kind == 0:  # an exact duplicate re-indexed under another chunk id
        return [{**base, "chunk_id": base["chunk_id"] + "-copy"}]
    if kind == 1:  # an overlapping span of the same revision
        text = base["text"][: max(20, len(base["text"]) // 2)]
        span = {"start": base["span"]["start"], "end": base["span"]["start"] + len(text)}
        return [{**base, "chunk_id": None, "span": span, "text": text, "text_sha256": sha256(text)}]
    if kind == 2:  # another tenant's evidence
        other = "globex" if tenant == "acme" else "acme"
        return [rng.choice(pool[other])]
    if kind == 3:  # a document the catalog does not know, and a tampered text
        ghost = {**base, "document_id": "not-in-catalog", "chunk_id": "ghost/0"}
        tampered = {**base, "chunk_id": base["chunk_id"] + "-t", "text": base["text"] + " (edited)"}
        return [ghost, tampered]
    if kind == 4:  # missing provenance
        return [{**base, "source_url": None, "text_sha256": None}]
    text = " ".join([base["text"]] * 40)  # oversized: far above any evidence budget
    return [
        {**base, "chunk_id": base["chunk_id"] + "-all", "text": text, "text_sha256": sha256(text)}
    ]


def requests() -> list[dict]:
    rng = random.Random(SEED)
    pool = chunks()
    out = []
    for tenant in ("acme", "globex"):
        for n in range(14):
            question, facets = QUESTIONS[tenant][n % len(QUESTIONS[tenant])]
            principal = PRINCIPALS[tenant][n % len(PRINCIPALS[tenant])]
            allowed = [c for c in pool[tenant] if c["document_id"] in ACCESS[principal["user_id"]]]
            others = [c for c in pool[tenant] if c not in allowed]
            picked = rng.sample(allowed, k=min(len(allowed), rng.randint(6, 9)))
            picked += rng.sample(others, k=min(len(others), rng.randint(1, 2)))
            if "refunds" in facets:  # the conflict pair: same passage, 14 vs 30 days
                picked += [c for c in pool[tenant] if c["chunk_id"] in CONFLICT and c not in picked]
            picked += _specials(tenant, n, allowed, pool, rng)
            candidates = [
                _candidate(chunk, f"{tenant}-q{n:02d}-c{i:02d}", rng, facets)
                for i, chunk in enumerate(picked)
            ]
            request = {
                "request_id": f"{tenant}-q{n:02d}",
                "tenant_id": tenant,
                "principal": principal,
                "question": question,
                "facets": facets,
                "as_of": AS_OF,
                "history": n == 7,
                "candidates": candidates,
            }
            if n == 5:
                request["budget"] = {"input_limit": 1200, "reserved_answer": 256}
            out.append(request)
    return out


def malformed(valid: list[dict]) -> list[str]:
    """Lines that must be dead-lettered, one per class."""
    first = valid[0]
    missing = {k: v for k, v in valid[1].items() if k != "question"}
    missing["request_id"] = "acme-bad-missing-question"
    wrong = {**valid[2], "request_id": "acme-bad-types", "history": "sometimes"}
    wrong["candidates"] = [{**valid[2]["candidates"][0], "retrieval_score": "high"}]
    empty = {**valid[3], "request_id": "acme-bad-empty", "candidates": []}
    duplicate = {**first, "question": first["question"] + " Please answer briefly."}
    return [
        '{"request_id": "acme-broken", "tenant_id": "acme", "question": "trunc',
        json.dumps(missing),
        json.dumps(wrong),
        json.dumps(empty),
        json.dumps(duplicate),
        json.dumps(["not", "an", "object"]),
    ]


def flat_rows(valid: list[dict]) -> list[dict]:
    """The same requests, one row per candidate carrying the request fields."""
    rows = []
    for request in valid:
        header = {k: v for k, v in request.items() if k != "candidates"}
        rows += [{**header, **c, "tenant_id": request["tenant_id"]} for c in request["candidates"]]
    return rows


def write_jsonl(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def main(out_dir: Path = HERE) -> None:
    """Write requests.jsonl, requests_flat.jsonl and catalog.jsonl into `out_dir`."""
    valid = requests()
    lines = [json.dumps(r) for r in valid]
    bad = malformed(valid)
    # malformed lines are interleaved so they are not all in one bundle
    for i, line in enumerate(bad):
        lines.insert(3 + i * 5, line)
    write_jsonl(out_dir / "requests.jsonl", lines)
    write_jsonl(out_dir / "requests_flat.jsonl", [json.dumps(r) for r in flat_rows(valid)])
    write_jsonl(out_dir / "catalog.jsonl", [json.dumps(r) for r in catalog_rows()])


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
