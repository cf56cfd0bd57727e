"""Map HotpotQA (distractor) and RAMDocs records onto the request contract.

Mapping choices (the report repeats them):
- one tenant (`bench`), one principal (`bench-user` in group `readers`), and every
  document readable by that group: the gate passes everything, so quality
  differences come from dedup, selection and ordering only;
- one catalog document per paragraph (HotpotQA context, RAMDocs document), one
  revision effective since 2000-01-01, span = the whole paragraph, sha256 of its text;
  document and evidence ids are short (`hp<question index>.<context id>`,
  `rd<question index>.<document index>`) because our prompt shows the document id
  in every evidence header, where a long id costs tokens;
- retrieval scores: BM25 (`bm25s`, Lucene variant, English stopwords) of the
  question over that question's own candidates, rounded to 6 decimals;
- HotpotQA requests carry no facets; RAMDocs requests take `disambig_entity` as
  facets, tagged on a document when the entity (or the qualifier after its comma
  or inside its parentheses) appears in the text, case-insensitively.
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
TENANT = "bench"
GROUP = "readers"
PRINCIPAL = Principal(user_id="bench-user", groups=(GROUP,))
EFFECTIVE = datetime(2000, 1, 1, tzinfo=UTC)
REVISION = "r1"


class DataMissingError(FileNotFoundError):
    """The evaluation data is not where the option points; the message says where to get it."""


def data_file(data_dir: Path, relative: str) -> Path:
    """Path of one data file, or a DataMissingError naming the upstream source."""
    path = Path(data_dir) / relative
    if not path.is_file():
        raise DataMissingError(
            f"{path} not found. Pass --data-dir pointing at a directory holding "
            f"{HOTPOTQA_FILE} (HotpotQA dev distractor, 500-question IRCoT subsample, "
            "github.com/xindili-cmu/anlp-project-multihop processed_data/hotpotqa/"
            f"dev_subsampled.jsonl) and {RAMDOCS_FILE} (github.com/HanNight/RAMDocs); "
            "the default is ../shared/data relative to the project root."
        )
    return path


def read_jsonl(path: Path) -> Iterator[dict]:
    """One dict per non-empty line."""
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


@dataclass(frozen=True)
class Paragraph:
    """One passage of a record before it becomes a candidate."""

    key: str
    title: str | None
    text: str
    facets: tuple[str, ...] = ()


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


def bm25_scores(question: str, texts: Sequence[str]) -> list[float]:
    """BM25 of the question over these texts only (scores comparable within a request)."""
    corpus = bm25s.tokenize(list(texts), stopwords="en", show_progress=False)
    if not any(corpus.ids):
        return [0.0] * len(texts)
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    query = bm25s.tokenize(question, stopwords="en", show_progress=False, return_ids=False)[0]
    return [round(float(s), 6) for s in retriever.get_scores(query)]


def build_request(
    request_id: str, question: str, paragraphs: Sequence[Paragraph], facets: Sequence[str] = ()
) -> Request:
    """A request whose candidates are these paragraphs, scored by BM25 of the question."""
    scores = bm25_scores(question, [p.text for p in paragraphs])
    candidates = tuple(
        Candidate(
            evidence_id=p.key,
            tenant_id=TENANT,
            document_id=p.key,
            revision_id=REVISION,
            chunk_id=f"{p.key}#0",
            source_url=f"bench://{p.key}",
            title=p.title,
            effective_at=EFFECTIVE,
            span=Span(start=0, end=len(p.text)),
            text=p.text,
            text_sha256=hashlib.sha256(p.text.encode("utf-8")).hexdigest(),
            retrieval_score=score,
            query_facets=p.facets,
        )
        for p, score in zip(paragraphs, scores, strict=True)
    )
    return Request(
        request_id=request_id,
        tenant_id=TENANT,
        principal=PRINCIPAL,
        question=question,
        facets=tuple(facets),
        candidates=candidates,
    )


def catalog_documents(requests: Sequence[Request]) -> list[CatalogDocument]:
    """One readable, single-revision catalog entry per candidate document."""
    return [
        CatalogDocument(
            tenant_id=TENANT,
            document_id=c.document_id,
            allowed_groups=(GROUP,),
            revisions=(Revision(revision_id=REVISION, effective_at=EFFECTIVE),),
        )
        for r in requests
        for c in r.candidates
    ]


def hotpotqa_cases(data_dir: Path, limit: int | None = None) -> list[HotpotCase]:
    """HotpotQA distractor questions: ten paragraphs each, two of them supporting."""
    cases = []
    for index, record in enumerate(read_jsonl(data_file(data_dir, HOTPOTQA_FILE))):
        qid = record["question_id"]
        paragraphs = [
            Paragraph(key=f"hp{index}.{c['id']}", title=c["title"], text=c["paragraph_text"])
            for c in record["contexts"]
        ]
        supporting = frozenset(
            p.key for p, c in zip(paragraphs, record["contexts"], strict=True) if c["is_supporting"]
        )
        answers = tuple(s for a in record["answers_objects"] for s in a["spans"] if s)
        request = build_request(f"hp-{qid}", record["question_text"], paragraphs)
        cases.append(HotpotCase(request=request, supporting=supporting, answers=answers))
        if limit is not None and len(cases) >= limit:
            break
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
    for index, record in enumerate(read_jsonl(data_file(data_dir, RAMDOCS_FILE))):
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
        misinfo = frozenset(
            p.key
            for p, d in zip(paragraphs, record["documents"], strict=True)
            if d["type"] == "misinfo"
        )
        request = build_request(f"rd-{index}", record["question"], paragraphs, entities)
        cases.append(
            RamCase(request=request, gold_answers=tuple(record["gold_answers"]), misinfo=misinfo)
        )
        if limit is not None and len(cases) >= limit:
            break
    return cases
