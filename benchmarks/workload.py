"""A generated speed workload whose passages are real paragraphs (realistic token lengths).

Each request draws distinct paragraphs from the pool (HotpotQA contexts and
RAMDocs documents). A "fresh" candidate gets a short suffix naming its request so
that no text repeats across requests (a cold token cache stays cold); a "hot"
candidate is one of a small shared set, verbatim, so it repeats across requests.
One catalog document per pool paragraph; scores are seeded random numbers.
"""

import hashlib
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.adapters import (
    EFFECTIVE,
    GROUP,
    HOTPOTQA_FILE,
    PRINCIPAL,
    RAMDOCS_FILE,
    REVISION,
    TENANT,
    data_file,
    read_jsonl,
)
from schemas import Candidate, CatalogDocument, Request, Revision, Span


@dataclass(frozen=True)
class Pool:
    """Distinct real paragraphs and real questions to build requests from."""

    paragraphs: tuple[str, ...]
    questions: tuple[str, ...]

    @classmethod
    def load(cls, data_dir: Path) -> "Pool":
        texts: dict[str, None] = {}
        questions = []
        for record in read_jsonl(data_file(data_dir, HOTPOTQA_FILE)):
            questions.append(record["question_text"])
            texts.update((c["paragraph_text"], None) for c in record["contexts"])
        for record in read_jsonl(data_file(data_dir, RAMDOCS_FILE)):
            questions.append(record["question"])
            texts.update((d["text"], None) for d in record["documents"])
        return cls(tuple(t for t in texts if t.strip()), tuple(questions))

    def catalog(self) -> list[CatalogDocument]:
        """One readable single-revision document per paragraph."""
        return [
            CatalogDocument(
                tenant_id=TENANT,
                document_id=f"d{i}",
                allowed_groups=(GROUP,),
                revisions=(Revision(revision_id=REVISION, effective_at=EFFECTIVE),),
            )
            for i in range(len(self.paragraphs))
        ]


def _candidate(doc: int, text: str, score: float, evidence_id: str) -> Candidate:
    return Candidate(
        evidence_id=evidence_id,
        tenant_id=TENANT,
        document_id=f"d{doc}",
        revision_id=REVISION,
        chunk_id=f"d{doc}#0",
        source_url=f"bench://d{doc}",
        title=f"Paragraph {doc}",
        effective_at=EFFECTIVE,
        span=Span(start=0, end=len(text)),
        text=text,
        text_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        retrieval_score=score,
    )


def generate(
    pool: Pool,
    requests: int,
    per_request: int,
    repeat_fraction: float = 0.0,
    hot_set: int = 200,
    seed: int = 7,
) -> Iterator[Request]:
    """Requests one at a time (memory stays flat however many are asked for).

    `repeat_fraction` of each request's candidates come verbatim from the first
    `hot_set` paragraphs, so they recur across requests; the rest are fresh.
    """
    if per_request > len(pool.paragraphs):
        raise ValueError(f"per_request {per_request} exceeds the pool of {len(pool.paragraphs)}")
    rng = random.Random(seed)
    hot = min(hot_set, len(pool.paragraphs) // 2)
    n_hot = round(per_request * repeat_fraction)
    for r in range(requests):
        hot_docs = rng.sample(range(hot), n_hot)
        fresh_docs = rng.sample(range(hot, len(pool.paragraphs)), per_request - n_hot)
        candidates = [
            _candidate(d, pool.paragraphs[d], round(rng.random(), 6), f"q{r}.{j}")
            for j, d in enumerate(hot_docs)
        ] + [
            _candidate(d, f"{pool.paragraphs[d]} (q{r})", round(rng.random(), 6), f"q{r}.{j}")
            for j, d in enumerate(fresh_docs, start=n_hot)
        ]
        yield Request(
            request_id=f"q{r}",
            tenant_id=TENANT,
            principal=PRINCIPAL,
            question=rng.choice(pool.questions),
            candidates=tuple(candidates),
        )


def candidate_texts(requests: Sequence[Request]) -> list[str]:
    """Every candidate text of a workload, repeats included: what the floor encodes."""
    return [c.text for r in requests for c in r.candidates]
