"""A generated speed workload whose passages are real paragraphs (realistic token lengths).

Each request draws distinct paragraphs from the pool (HotpotQA contexts and
RAMDocs documents). A "fresh" candidate gets a short suffix naming its request so
that no text repeats across requests (a cold token cache stays cold); a "hot"
candidate is one of a small shared set, verbatim, so it repeats across requests.
One catalog document per pool paragraph; scores are seeded random numbers.

Real retrieval also returns several chunks of one document, and passages of
very different lengths: `chunks` cuts each drawn paragraph into that many
chunks of whole words and takes them all (10 candidates in chunks of 5 come
from 2 documents), and `join` makes each passage that many consecutive pool
paragraphs (long passages, one document); both together make paragraph-sized
chunks of one document.
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
    hotpotqa: int
    """How many of the paragraphs, the first ones, are HotpotQA's (consecutive ones are
    the contexts of one question: Wikipedia paragraphs of related articles)."""

    @classmethod
    def load(cls, data_dir: Path) -> "Pool":
        texts: dict[str, None] = {}
        questions = []
        for record in read_jsonl(data_file(data_dir, HOTPOTQA_FILE)):
            questions.append(record["question_text"])
            texts.update((c["paragraph_text"], None) for c in record["contexts"])
        hotpotqa = sum(1 for t in texts if t.strip())
        for record in read_jsonl(data_file(data_dir, RAMDOCS_FILE)):
            questions.append(record["question"])
            texts.update((d["text"], None) for d in record["documents"])
        return cls(tuple(t for t in texts if t.strip()), tuple(questions), hotpotqa)

    def hotpotqa_only(self) -> "Pool":
        """The HotpotQA paragraphs alone (the same catalog documents: a prefix of them)."""
        return Pool(self.paragraphs[: self.hotpotqa], self.questions, self.hotpotqa)

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


def _candidate(
    doc: int, text: str, score: float, evidence_id: str, chunk: int | None = None
) -> Candidate:
    """A whole paragraph (its span the whole text), or chunk `chunk` of one (no span)."""
    return Candidate(
        evidence_id=evidence_id,
        tenant_id=TENANT,
        document_id=f"d{doc}",
        revision_id=REVISION,
        chunk_id=f"d{doc}#{chunk or 0}",
        source_url=f"bench://d{doc}",
        title=f"Paragraph {doc}",
        effective_at=EFFECTIVE,
        span=Span(start=0, end=len(text)) if chunk is None else None,
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
    chunks: int = 1,
    join: int = 1,
) -> Iterator[Request]:
    """Requests one at a time (memory stays flat however many are asked for).

    `repeat_fraction` of each request's documents come verbatim from the first
    `hot_set` paragraphs, so they recur across requests; the rest are fresh.
    `chunks` and `join` shape the passages (module docstring).
    """
    documents = -(-per_request // chunks)
    hot = min(hot_set, len(pool.paragraphs) // 2)
    n_hot = round(documents * repeat_fraction)
    starts = range(hot, len(pool.paragraphs) - join + 1)
    if documents > len(pool.paragraphs) or documents - n_hot > len(starts):
        raise ValueError(f"per_request {per_request} exceeds the pool of {len(pool.paragraphs)}")
    rng = random.Random(seed)
    for r in range(requests):
        drawn = [(d, True) for d in rng.sample(range(hot), n_hot)] + [
            (d, False) for d in rng.sample(starts, documents - n_hot)
        ]
        candidates: list[Candidate] = []
        for d, repeated in drawn:
            text = " ".join(pool.paragraphs[d : d + join])
            for k, piece in enumerate(_pieces(text, chunks)):
                if len(candidates) == per_request:
                    break
                score = round(rng.random(), 6)
                chunk = k if chunks > 1 else None
                text_k = piece if repeated else f"{piece} (q{r})"
                candidates.append(_candidate(d, text_k, score, f"q{r}.{len(candidates)}", chunk))
        yield Request(
            request_id=f"q{r}",
            tenant_id=TENANT,
            principal=PRINCIPAL,
            question=rng.choice(pool.questions),
            candidates=tuple(candidates),
        )


def _pieces(text: str, chunks: int) -> list[str]:
    """`text` cut into `chunks` runs of whole words of about equal length (fewer when short)."""
    words = text.split()
    if chunks == 1 or len(words) < chunks:
        return [text]
    size = -(-len(words) // chunks)
    return [" ".join(words[i : i + size]) for i in range(0, len(words), size)]


def candidate_texts(requests: Sequence[Request]) -> list[str]:
    """Every candidate text of a workload, repeats included: what the floor encodes."""
    return [c.text for r in requests for c in r.candidates]
