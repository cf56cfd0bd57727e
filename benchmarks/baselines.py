"""The packers compared on the same requests: ours, the naive loop, LlamaIndex, Haystack.

Every packer is built once for an evidence budget (tokens) and then called per
request. All of them see the candidates in retrieval order (score descending,
ties by evidence id), which is what a retriever hands over. Each returns the
passages that reach the model, with the text the model sees, and the context
string (or our exact ledger) so the caller can count tokens used.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import tiktoken

from packer import Catalog, TokenCounter, pack_request
from schemas import Candidate, PackingConfig, Request

# A fixed applicability time: the adapters' documents are effective since 2000.
EVAL_TIME = datetime(2026, 1, 1, tzinfo=UTC)
# The rule of thumb users apply to turn a token budget into Haystack's word threshold.
WORDS_PER_TOKEN = 0.75


@dataclass(frozen=True)
class Packed:
    """What one packer put in front of the model for one request.

    `kept` maps evidence id to the text the model sees of it (a truncating packer
    may show a prefix). `tokens` is the packer's own exact ledger when it has one;
    otherwise the caller counts `context`. `conflicts` lists the groups of kept
    passages the packer flagged as conflicting (None: it does not look).
    """

    kept: dict[str, str]
    context: str
    tokens: int | None = None
    conflicts: tuple[frozenset[str], ...] | None = None


Packer = Callable[[Request], Packed]


def retrieval_order(request: Request) -> list[Candidate]:
    """Candidates best first, as a retriever returns them."""
    return sorted(request.candidates, key=lambda c: (-c.retrieval_score, c.evidence_id))


def tiktoken_counter(encoding: tiktoken.Encoding) -> Callable[[str], int]:
    """The token count users write: encode and take the length, no cache."""
    return lambda text: len(encoding.encode_ordinary(text))


class OurPacker:
    """`pack_request` with an evidence budget; reports its exact ledger."""

    name = "ours"

    def __init__(self, config: PackingConfig, catalog: Catalog, tokens: TokenCounter) -> None:
        self.config = config
        self.catalog = catalog
        self.tokens = tokens

    def __call__(self, request: Request) -> Packed:
        result = pack_request(request, self.catalog, self.config, self.tokens, EVAL_TIME)
        texts = {c.evidence_id: c.text for c in request.candidates}
        kept = {
            eid: texts[eid]
            for e in result.manifest.evidence
            for eid in (e.evidence_id, *e.derived_from)
        }
        conflicts = tuple(
            frozenset(c.evidence_ids) for c in result.manifest.conflicts if len(c.labels) > 1
        )
        return Packed(
            kept=kept,
            context=result.prompt.messages[-1].content,
            tokens=result.manifest.budget.used,
            conflicts=conflicts,
        )


class NaivePacker:
    """The loop from the seed articles: top-k by score, numbered headers, stop at the budget.

    As written in the seeds it counts only the passage text, not its header or
    separator, so the rendered context can overrun the budget. `count_headers`
    charges each whole rendered block instead (the obvious fix), for a
    comparison at a truly equal budget.
    """

    def __init__(
        self, budget: int, count: Callable[[str], int], count_headers: bool = False
    ) -> None:
        self.budget = budget
        self.count = count
        self.count_headers = count_headers
        self.name = "naive-exact" if count_headers else "naive"

    def __call__(self, request: Request) -> Packed:
        out: list[str] = []
        kept: dict[str, str] = {}
        used = 0
        seen: set[str] = set()
        for cand in retrieval_order(request):
            key = cand.text[:200]
            if key in seen:
                continue
            block = f"[{len(out) + 1}] ({cand.title or cand.document_id})\n{cand.text.strip()}"
            cost = self.count(f"{block}\n\n" if self.count_headers else cand.text)
            if used + cost > self.budget:
                break
            seen.add(key)
            used += cost
            kept[cand.evidence_id] = cand.text
            out.append(block)
        return Packed(kept=kept, context="\n\n".join(out))


class _LlamaIndexPromptHelper:
    """A LlamaIndex PromptHelper whose window is the evidence budget (no output reserve)."""

    def __init__(self, budget: int) -> None:
        from llama_index.core import PromptTemplate
        from llama_index.core.indices.prompt_helper import PromptHelper

        self.helper = PromptHelper(context_window=budget, num_output=0, chunk_overlap_ratio=0.0)
        self.prompt = PromptTemplate("{context_str}")


class LlamaIndexTruncate(_LlamaIndexPromptHelper):
    """LlamaIndex `PromptHelper.truncate`: every chunk cut to an equal share of the window.

    This is how its simple-summarize synthesizer fits retrieved chunks into one
    call. The window is the evidence budget; no output reserve, no overlap.
    """

    name = "llamaindex-truncate"

    def __call__(self, request: Request) -> Packed:
        order = retrieval_order(request)
        chunks = self.helper.truncate(self.prompt, [c.text for c in order])
        kept = {c.evidence_id: chunk for c, chunk in zip(order, chunks, strict=True) if chunk}
        return Packed(kept=kept, context="\n".join(chunks))


class LlamaIndexRepack(_LlamaIndexPromptHelper):
    """LlamaIndex `PromptHelper.repack`: chunks joined and re-split to fill windows.

    Its compact synthesizers send the first window, then refine with the rest;
    at one call per question only the first window reaches the model. A passage
    counts as kept when its whole text is inside that window.
    """

    name = "llamaindex-repack"

    def __call__(self, request: Request) -> Packed:
        order = retrieval_order(request)
        windows = self.helper.repack(self.prompt, [c.text for c in order])
        first = windows[0] if windows else ""
        kept = {c.evidence_id: c.text for c in order if c.text.strip() and c.text.strip() in first}
        return Packed(kept=kept, context=first)


class HaystackLostInTheMiddle:
    """Haystack `LostInTheMiddleRanker` with a word threshold of 0.75 words per budget token.

    The ranker keeps adding documents until the threshold is reached, including
    the one that crosses it, and orders them best at the edges.
    """

    name = "haystack-litm"

    def __init__(self, budget: int) -> None:
        from haystack import Document
        from haystack.components.rankers import LostInTheMiddleRanker

        self.document = Document
        self.ranker = LostInTheMiddleRanker(
            word_count_threshold=max(1, int(budget * WORDS_PER_TOKEN))
        )

    def __call__(self, request: Request) -> Packed:
        docs = [
            self.document(id=c.evidence_id, content=c.text, score=c.retrieval_score)
            for c in retrieval_order(request)
        ]
        ranked = self.ranker.run(documents=docs)["documents"]
        kept = {d.id: d.content for d in ranked}
        context = "\n\n".join(f"[{i}] {d.content.strip()}" for i, d in enumerate(ranked, start=1))
        return Packed(kept=kept, context=context)
