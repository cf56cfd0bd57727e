"""The packers compared on the same requests: ours, naive loops, LlamaIndex, Haystack.

Every packer is built once for an evidence budget (tokens) and then called per
request. All of them see the candidates in retrieval order (score descending,
ties by evidence id), which is what a retriever hands over. Each returns the
passages that reach the model, with the text the model sees of each, and the
context string (or our exact ledger) so the caller can count tokens used.

What ours showed is read back from its rendered prompt, not assumed: each
block's text (`packer.layout.parse_blocks`, unescaped) is mapped through the
label map, and ids the manifest lists in a block's `derived_from` count as
kept (a copy of them was shown). The prompt may show a part of a passage.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import tiktoken

from benchmarks.adapters import EVAL_TIME
from packer import Catalog, PackerRuntime, PackResult, pack_request
from packer.layout import PromptLayout, parse_blocks
from packer.records import Evidence, text_facts
from schemas import Candidate, ExclusionReason, PackingConfig, Request

# The rule of thumb users apply to turn a token budget into Haystack's word threshold.
WORDS_PER_TOKEN = 0.75


@dataclass(frozen=True)
class Packed:
    """What one packer put in front of the model for one request.

    `shown` maps the evidence id of each block to the text the model sees of it
    (a truncating packer shows a prefix, ours may show some sentences);
    `copies` maps ids folded into a shown block to that block's id. `tokens`
    is the packer's own exact ledger when it has one; otherwise the caller
    counts `context`. `conflicts` lists the groups of shown passages the
    packer flagged to the model as conflicting (None: it does not look);
    `conflict_groups` every group it detected, shown or not; `excluded` the
    count of left-out candidates per reason, for a packer that says why.
    """

    shown: dict[str, str]
    context: str
    copies: dict[str, str] = field(default_factory=dict)
    tokens: int | None = None
    conflicts: tuple[frozenset[str], ...] | None = None
    conflict_groups: tuple[frozenset[str], ...] | None = None
    excluded: dict[str, int] | None = None
    noted_missing: frozenset[str] | None = None
    """Conflict members the prompt's notes say were left out (None: the packer does not say)."""

    @property
    def kept(self) -> set[str]:
        """Every id whose text (or a copy of it) reached the model."""
        return self.shown.keys() | self.copies.keys()

    def block_of(self, evidence_id: str) -> str | None:
        """The id of the block that showed this evidence, itself or the copy it was folded into."""
        if evidence_id in self.shown:
            return evidence_id
        return self.copies.get(evidence_id)


Packer = Callable[[Request], Packed]


def retrieval_order(request: Request) -> list[Candidate]:
    """Candidates best first, as a retriever returns them."""
    return sorted(request.candidates, key=lambda c: (-c.retrieval_score, c.evidence_id))


def tiktoken_counter(encoding: tiktoken.Encoding) -> Callable[[str], int]:
    """The token count users write: encode and take the length, no cache."""
    return lambda text: len(encoding.encode_ordinary(text))


def shown_blocks(result: PackResult) -> dict[str, str]:
    """Evidence id -> the text its block shows, parsed from the rendered user message."""
    by_label = {entry.label: entry.evidence_id for entry in result.prompt.label_map}
    user = result.prompt.messages[-1].content
    return {by_label[label]: text for label, text in parse_blocks(user).items()}


class OurPacker:
    """`pack_request` with an evidence budget; reports its exact ledger."""

    name = "ours"

    def __init__(self, config: PackingConfig, catalog: Catalog, runtime: PackerRuntime) -> None:
        self.config = config
        self.catalog = catalog
        self.runtime = runtime

    def __call__(self, request: Request) -> Packed:
        return self.adapt(self.pack(request))

    def pack(self, request: Request) -> PackResult:
        """Packing alone: what the speed benchmark times (`adapt` reads the result back
        for the quality figures, work no user of the packer does)."""
        return pack_request(request, self.catalog, self.config, self.runtime, EVAL_TIME)

    @staticmethod
    def adapt(result: PackResult) -> Packed:
        """The shown blocks, copies, tokens, conflicts and exclusions of a packed request."""
        by_label = {entry.label: entry.evidence_id for entry in result.prompt.label_map}
        copies = {
            folded: e.evidence_id for e in result.manifest.evidence for folded in e.derived_from
        }
        return Packed(
            shown=shown_blocks(result),
            copies=copies,
            context=result.prompt.messages[-1].content,
            tokens=result.manifest.budget.used,
            conflicts=tuple(
                frozenset(by_label[label] for label in c.labels)
                for c in result.manifest.conflicts
                if len(c.labels) > 1
            ),
            conflict_groups=tuple(frozenset(c.evidence_ids) for c in result.manifest.conflicts),
            excluded={x.reason: x.count for x in result.manifest.excluded},
            noted_missing=frozenset(
                x.evidence_id
                for x in result.exclusions
                if x.reason == ExclusionReason.CONFLICT_SIDE_OVER_BUDGET
            ),
        )


Block = Callable[[int, Candidate], str]
"""Renders the n-th kept candidate (1-based) as the block a naive loop appends."""


def numbered_block(n: int, cand: Candidate) -> str:
    """The seeds' format: a `[n] (title)` header line, the text, a blank line after."""
    return f"[{n}] ({cand.title or cand.document_id})\n{cand.text.strip()}\n\n"


def our_format_block(layout: PromptLayout, n: int, cand: Candidate) -> str:
    """The candidate as our packer's `layout` renders a block, with label `En` (no dedup,
    no date). The one place this benchmark touches our layout."""
    record = Evidence(
        candidate=cand,
        document_id=cand.document_id or "",
        revision_id=cand.revision_id or "",
        effective_at=cand.effective_at,
        text=cand.text,
        facts=text_facts(cand.text),
        score=cand.retrieval_score,
        facets=cand.query_facets,
        span=None,
    )
    return layout.block(f"E{n}", layout.body(layout.header(record, dated=False), cand.text))


class NaivePacker:
    """The loop from the seed articles: top-k by score, stop at the first that does not fit.

    As written in the seeds it skips exact repeats of a text's first 200
    characters and counts only the passage text, not its header or separator,
    so the rendered context can overrun the budget. `count_headers` charges
    each whole rendered block instead (the obvious fix), for a comparison at a
    truly equal budget; `block` chooses the rendering (the seeds' numbered
    headers, or our evidence blocks).
    """

    def __init__(
        self,
        budget: int,
        count: Callable[[str], int],
        count_headers: bool = False,
        block: Block = numbered_block,
    ) -> None:
        self.budget = budget
        self.count = count
        self.count_headers = count_headers
        self.block = block

    def __call__(self, request: Request) -> Packed:
        out: list[str] = []
        shown: dict[str, str] = {}
        used = 0
        seen: set[str] = set()
        for cand in retrieval_order(request):
            key = cand.text[:200]
            if key in seen:
                continue
            block = self.block(len(out) + 1, cand)
            cost = self.count(block if self.count_headers else cand.text)
            if used + cost > self.budget:
                break
            seen.add(key)
            used += cost
            shown[cand.evidence_id] = cand.text
            out.append(block)
        return Packed(shown=shown, context="".join(out).rstrip("\n"))


class OraclePacker:
    """The best any packer could do at the same budget, in our layout and ledger.

    It knows the labels: the gold passages first, shortest first, then the rest
    by score, each as our default block (`our_format_block`); the ledger is
    ours (the blocks plus the notes, the no-evidence note when nothing fits),
    counted exactly, and a block that does not fit is skipped, not the end of
    the loop, so it is never over budget. It packs whole passages only and
    does not fold copies or pay for facet notes: where ours packs a sentence
    unit of a passage too long for the budget, ours can score above it.
    """

    name = "oracle"

    def __init__(self, budget: int, layout: PromptLayout, gold: frozenset[str]) -> None:
        self.budget = budget
        self.layout = layout
        self.gold = gold

    def __call__(self, request: Request) -> Packed:
        layout = self.layout
        ranked = retrieval_order(request)
        gold = sorted(
            (c for c in ranked if c.evidence_id in self.gold),
            key=lambda c: layout.count(c.text),
        )
        rest = [c for c in ranked if c.evidence_id not in self.gold]
        empty = layout.count(layout.notes((), "", has_evidence=False))
        blocks: list[str] = []
        shown: dict[str, str] = {}
        used = 0
        for cand in [*gold, *rest]:
            block = our_format_block(layout, len(blocks) + 1, cand)
            cost = layout.count(block)
            if used + cost <= self.budget:
                used += cost
                blocks.append(block)
                shown[cand.evidence_id] = cand.text
        return Packed(shown=shown, context="".join(blocks), tokens=used if blocks else empty)


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
        try:
            chunks = self.helper.truncate(self.prompt, [c.text for c in order])
        except ValueError:
            # Its share of the window is below one token a chunk (50 candidates at 150
            # tokens): LlamaIndex refuses the call, so nothing reaches the model.
            return Packed(shown={}, context="")
        shown = {c.evidence_id: chunk for c, chunk in zip(order, chunks, strict=True) if chunk}
        return Packed(shown=shown, context="\n".join(chunks))


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
        shown = {c.evidence_id: c.text for c in order if c.text.strip() and c.text.strip() in first}
        return Packed(shown=shown, context=first)


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
        shown = {d.id: d.content for d in ranked}
        context = "\n\n".join(f"[{i}] {d.content.strip()}" for i, d in enumerate(ranked, start=1))
        return Packed(shown=shown, context=context)
