"""Map the four public QA sets onto the request contract.

Mapping choices (the report repeats them):
- one tenant (`bench`), one principal (`bench-user` in group `readers`), and every
  document readable by that group: the gate passes everything, so quality
  differences come from dedup, selection and ordering only;
- one catalog document per paragraph (HotpotQA context, RAMDocs document,
  ConflictNQ passage) with one revision effective since 2000-01-01, span = the
  whole paragraph, sha256 of its text; MultiHop-RAG keeps one document per
  article (url): its facts share the document id, one chunk per fact (no span,
  so facts of one article never merge as overlaps), and the article's
  `published_at` is both the candidates' `effective_at` and its revision's
  (checked to be before the evaluation time, 2026-01-01);
- ids are short (`hp<question>.<context id>`, `rd<question>.<document>`,
  `mh<question>.a<article>.<fact>` in document `mh<question>.a<article>`
  (`mw...` in `multihop_rag-50`),
  `cq<question>.<passage>`), as a header that shows an id pays for it;
- retrieval scores: MultiHop-RAG's given `bm25_score` (BM25 over its pool of
  facts; `multihop_rag-50`, widened from that pool, `bm25s` over it);
  elsewhere BM25 (`bm25s`, Lucene variant, English stopwords) of the question
  over that request's own candidates, rounded to 6 decimals;
- titles: HotpotQA's Wikipedia titles (`hotpotqa`), none (`hotpotqa-notitle`,
  the same records), the headline (MultiHop-RAG), none (RAMDocs, ConflictNQ);
- source URL: the article's `url` (MultiHop-RAG: a news search returns it, as
  it returns the date; its host names the publisher the questions name);
  `bench://<document>` elsewhere; the publisher name (`source`), author and
  category are not carried;
- facets: RAMDocs requests take `disambig_entity`, tagged on a document when the
  entity (or the qualifier after its comma or inside its parentheses) appears
  in the text, case-insensitively; the other sets carry none;
- labels for the metrics: HotpotQA `is_supporting`; RAMDocs document `type`
  (correct, misinfo, noise); MultiHop-RAG `in_evidence_list` (null queries
  have no evidence); ConflictNQ `from_field` (one real passage, five fakes).
"""

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import bm25s

from schemas import Candidate, CatalogDocument, Principal, Request, Revision, Span

DEFAULT_DATA_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
HOTPOTQA_FILE = "hotpotqa/dev_subsampled.jsonl"
RAMDOCS_FILE = "ramdocs/RAMDocs_test.jsonl"
MULTIHOP_FILE = "multihop_rag/multihop_rag_500.jsonl"
MULTIHOP_POOL_FILE = "multihop_rag/facts_pool.jsonl"
CONFLICT_NQ_FILE = "conflict_nq/conflict_nq_eval.jsonl"
SOURCES = {
    HOTPOTQA_FILE: "HotpotQA dev distractor, 500-question IRCoT subsample, "
    "github.com/xindili-cmu/anlp-project-multihop processed_data/hotpotqa/dev_subsampled.jsonl",
    RAMDOCS_FILE: "github.com/HanNight/RAMDocs",
    MULTIHOP_FILE: "MultiHop-RAG, github.com/yixuantt/MultiHop-RAG, 500-query sample with "
    "candidate passages built by multihop_rag/make.py",
    MULTIHOP_POOL_FILE: "MultiHop-RAG's pool of evidence facts, built by multihop_rag/make.py",
    CONFLICT_NQ_FILE: "github.com/4-en/ConflictNQ val + test with candidate passages built "
    "by conflict_nq/make.py",
}
TENANT = "bench"
GROUP = "readers"
PRINCIPAL = Principal(user_id="bench-user", groups=(GROUP,))
EFFECTIVE = datetime(2000, 1, 1, tzinfo=UTC)
# The applicability time of every request: each document must be effective by then.
EVAL_TIME = datetime(2026, 1, 1, tzinfo=UTC)
REVISION = "r1"


class DataMissingError(FileNotFoundError):
    """The evaluation data is not where the option points; the message says where to get it."""


def data_file(data_dir: Path, relative: str) -> Path:
    """Path of one data file, or a DataMissingError naming the upstream source."""
    path = Path(data_dir) / relative
    if not path.is_file():
        holding = "; ".join(f"{name} ({source})" for name, source in SOURCES.items())
        raise DataMissingError(
            f"{path} not found. Pass --data-dir pointing at a directory holding {holding}. "
            "The default is ../shared/data relative to the project root."
        )
    return path


def read_jsonl(path: Path, limit: int | None = None) -> Iterator[dict]:
    """One dict per non-empty line, at most `limit` of them."""
    with open(path, encoding="utf-8") as handle:
        count = 0
        for line in handle:
            if limit is not None and count >= limit:
                return
            if line.strip():
                count += 1
                yield json.loads(line)


@dataclass(frozen=True)
class Paragraph:
    """One passage of a record before it becomes a candidate.

    `document` defaults to the key (one document per passage); `score` None
    means BM25 of the question over the request's passages; `chunk` set means
    the passage is that chunk of its document, with no span.
    """

    key: str
    title: str | None
    text: str
    facets: tuple[str, ...] = ()
    document: str | None = None
    chunk: int | None = None
    effective_at: datetime = EFFECTIVE
    score: float | None = None
    url: str | None = None


@dataclass(frozen=True)
class HotpotCase:
    """A HotpotQA question as a request, with what the metrics need."""

    request: Request
    supporting: frozenset[str]
    answers: tuple[str, ...]


@dataclass(frozen=True)
class RamCase:
    """A RAMDocs question as a request, with what the metrics need."""

    request: Request
    gold_answers: tuple[str, ...]
    misinfo: frozenset[str]
    correct: frozenset[str]


@dataclass(frozen=True)
class MultihopCase:
    """A MultiHop-RAG query as a request; `evidence` is empty for null queries; `answer`
    the set's short answer, a name for an inference query ("Google", "Sam Altman"),
    else a judgement ("Yes", "Consistent", "Insufficient information.")."""

    request: Request
    evidence: frozenset[str]
    null_query: bool
    answer: str = ""
    inference: bool = False


@dataclass(frozen=True)
class ConflictCase:
    """A ConflictNQ question as a request: one real passage against machine-written fakes."""

    request: Request
    real: str
    fakes: frozenset[str]
    real_short_answer: str


def bm25_scores(question: str, texts: Sequence[str]) -> list[float]:
    """BM25 of the question over these texts only (scores comparable within a request)."""
    corpus = bm25s.tokenize(list(texts), stopwords="en", show_progress=False)
    if not any(corpus.ids):
        return [0.0] * len(texts)
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    query = bm25s.tokenize(question, stopwords="en", show_progress=False, return_ids=False)[0]
    return [round(float(s), 6) for s in retriever.get_scores(query)]


def _candidate(p: Paragraph, score: float) -> Candidate:
    document = p.document or p.key
    return Candidate(
        evidence_id=p.key,
        tenant_id=TENANT,
        document_id=document,
        revision_id=REVISION,
        chunk_id=f"{document}#{p.chunk or 0}",
        source_url=p.url or f"bench://{document}",
        title=p.title,
        effective_at=p.effective_at,
        span=None if p.chunk is not None else Span(start=0, end=len(p.text)),
        text=p.text,
        text_sha256=hashlib.sha256(p.text.encode("utf-8")).hexdigest(),
        retrieval_score=score,
        query_facets=p.facets,
    )


def build_request(
    request_id: str, question: str, paragraphs: Sequence[Paragraph], facets: Sequence[str] = ()
) -> Request:
    """A request whose candidates are these paragraphs, scored as the paragraphs say."""
    if all(p.score is not None for p in paragraphs):
        scores = [p.score for p in paragraphs]
    else:
        scores = bm25_scores(question, [p.text for p in paragraphs])
    return Request(
        request_id=request_id,
        tenant_id=TENANT,
        principal=PRINCIPAL,
        question=question,
        facets=tuple(facets),
        candidates=tuple(_candidate(p, s) for p, s in zip(paragraphs, scores, strict=True)),  # type: ignore[arg-type]
    )


def catalog_documents(requests: Sequence[Request]) -> list[CatalogDocument]:
    """One readable, single-revision catalog entry per candidate document.

    The revision is effective when its candidates are (the adapters give all
    candidates of one document the same `effective_at`).
    """
    documents: dict[str, CatalogDocument] = {}
    for request in requests:
        for c in request.candidates:
            assert c.document_id is not None and c.effective_at is not None
            documents.setdefault(
                c.document_id,
                CatalogDocument(
                    tenant_id=TENANT,
                    document_id=c.document_id,
                    allowed_groups=(GROUP,),
                    revisions=(Revision(revision_id=REVISION, effective_at=c.effective_at),),
                ),
            )
    return list(documents.values())


def hotpotqa_cases(
    data_dir: Path, limit: int | None = None, titles: bool = True
) -> list[HotpotCase]:
    """HotpotQA distractor questions: ten paragraphs each, two of them supporting.

    `titles=False` drops the Wikipedia titles (the `hotpotqa-notitle` variant).
    """
    cases = []
    for index, record in enumerate(read_jsonl(data_file(data_dir, HOTPOTQA_FILE), limit)):
        paragraphs = [
            Paragraph(
                key=f"hp{index}.{c['id']}",
                title=c["title"] if titles else None,
                text=c["paragraph_text"],
            )
            for c in record["contexts"]
        ]
        supporting = frozenset(
            p.key for p, c in zip(paragraphs, record["contexts"], strict=True) if c["is_supporting"]
        )
        answers = tuple(s for a in record["answers_objects"] for s in a["spans"] if s)
        request = build_request(f"hp-{record['question_id']}", record["question_text"], paragraphs)
        cases.append(HotpotCase(request=request, supporting=supporting, answers=answers))
    return cases


def entity_facets(entities: Sequence[str], text: str) -> tuple[str, ...]:
    """Entities a text mentions: full name, or qualifier ("X, Qualifier" / "X (Qualifier)")."""
    lowered = text.lower()
    found = []
    for entity in entities:
        qualifier = re.search(r",\s*(.+)$|\((.+)\)", entity)
        names = [entity] + [g for g in (qualifier.groups() if qualifier else ()) if g]
        if any(name.strip().lower() in lowered for name in names):
            found.append(entity)
    return tuple(found)


def ramdocs_cases(data_dir: Path, limit: int | None = None) -> list[RamCase]:
    """RAMDocs questions: correct, misinformation and noise documents, several valid answers."""
    cases = []
    for index, record in enumerate(read_jsonl(data_file(data_dir, RAMDOCS_FILE), limit)):
        entities = tuple(dict.fromkeys(record["disambig_entity"]))
        paragraphs = [
            Paragraph(
                key=f"rd{index}.{j}",
                title=None,
                text=d["text"],
                facets=entity_facets(entities, d["text"]),
            )
            for j, d in enumerate(record["documents"])
        ]
        types = {p.key: d["type"] for p, d in zip(paragraphs, record["documents"], strict=True)}
        request = build_request(f"rd-{index}", record["question"], paragraphs, entities)
        cases.append(
            RamCase(
                request=request,
                gold_answers=tuple(record["gold_answers"]),
                misinfo=frozenset(k for k, t in types.items() if t == "misinfo"),
                correct=frozenset(k for k, t in types.items() if t == "correct"),
            )
        )
    return cases


def published(value: str) -> datetime:
    """An article's publication time, which must precede the evaluation time."""
    when = datetime.fromisoformat(value)
    if when.tzinfo is None or when >= EVAL_TIME:
        raise ValueError(f"published_at {value!r} is not a zoned time before {EVAL_TIME}")
    return when


def widened(records: Sequence[dict], pool: Sequence[dict], size: int) -> Iterator[list[dict]]:
    """Each record's candidate passages widened to `size` from the pool of facts: its
    evidence facts and the pool's best other facts by BM25 (`bm25s`, Lucene variant,
    English stopwords, over headline and fact), best first, as `make.py` picks ten.
    Every candidate is then scored on that one scale, so the widened request ranks its
    evidence among tens of look-alike news facts."""
    corpus = bm25s.tokenize([f"{p['title']} {p['fact']}" for p in pool], stopwords="en",
                            show_progress=False)  # fmt: skip
    retriever = bm25s.BM25(k1=1.5, b=0.75)
    retriever.index(corpus, show_progress=False)
    at = {p["pool_id"]: i for i, p in enumerate(pool)}
    for record in records:
        query = bm25s.tokenize(record["query"], stopwords="en", show_progress=False,
                               return_ids=False)[0]  # fmt: skip
        scores = retriever.get_scores(query)
        gold = {at[p["pool_id"]] for p in record["candidate_passages"] if p["in_evidence_list"]}
        others = sorted((i for i in range(len(pool)) if i not in gold), key=lambda i: -scores[i])
        chosen = sorted([*gold, *others[: max(0, size - len(gold))]], key=lambda i: -scores[i])
        yield [
            {**pool[i], "in_evidence_list": i in gold, "bm25_score": round(float(scores[i]), 6)}
            for i in chosen
        ]


def multihop_cases(
    data_dir: Path, limit: int | None = None, candidates: int | None = None
) -> list[MultihopCase]:
    """MultiHop-RAG news queries: ten one-sentence facts each, grouped by article; with
    `candidates`, that many from the pool of facts (`widened`: the held-out news QA shape,
    tens of candidates with the answer ranked below what fits)."""
    records = list(read_jsonl(data_file(data_dir, MULTIHOP_FILE), limit))
    passages: Iterator[list[dict]] = (r["candidate_passages"] for r in records)
    prefix = "mh" if candidates is None else "mw"  # ids unique across the sets of one run
    if candidates is not None:
        pool = list(read_jsonl(data_file(data_dir, MULTIHOP_POOL_FILE)))
        passages = widened(records, pool, candidates)
    cases = []
    for index, (record, given) in enumerate(zip(records, passages, strict=True)):
        articles: dict[str, int] = {}
        facts_seen: dict[str, int] = {}
        paragraphs = []
        evidence = set()
        for passage in given:
            article = articles.setdefault(passage["url"], len(articles))
            fact = facts_seen[passage["url"]] = facts_seen.get(passage["url"], -1) + 1
            document = f"{prefix}{index}.a{article}"
            paragraph = Paragraph(
                key=f"{document}.{fact}",
                title=passage["title"],
                text=passage["fact"],
                document=document,
                chunk=fact,
                effective_at=published(passage["published_at"]),
                score=float(passage["bm25_score"]),
                url=passage["url"],
            )
            paragraphs.append(paragraph)
            if passage["in_evidence_list"]:
                evidence.add(paragraph.key)
        request = build_request(f"{prefix}-{record['id']}", record["query"], paragraphs)
        cases.append(
            MultihopCase(
                request=request,
                evidence=frozenset(evidence),
                null_query=record["question_type"] == "null_query",
                answer=str(record.get("answer", "")),
                inference=record["question_type"] == "inference_query",
            )
        )
    return cases


def conflict_nq_cases(data_dir: Path, limit: int | None = None) -> list[ConflictCase]:
    """ConflictNQ questions: one real Natural Questions passage and five fakes contradicting it."""
    cases = []
    for index, record in enumerate(read_jsonl(data_file(data_dir, CONFLICT_NQ_FILE), limit)):
        passages = record["candidate_passages"]
        paragraphs = [
            Paragraph(key=f"cq{index}.{j}", title=None, text=p["passage"])
            for j, p in enumerate(passages)
        ]
        sides = {p.key: c["from_field"] for p, c in zip(paragraphs, passages, strict=True)}
        [real] = [k for k, side in sides.items() if side == "real_passages"]
        request = build_request(f"cq-{record['id']}", record["question"], paragraphs)
        cases.append(
            ConflictCase(
                request=request,
                real=real,
                fakes=frozenset(k for k, side in sides.items() if side == "fake_passages"),
                real_short_answer=record["real_short_answer"],
            )
        )
    return cases
