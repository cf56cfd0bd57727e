"""`pack_request`: one request in, its prompt, manifest and exclusions out.

Deterministic: candidates are processed in evidence-id order and every tie
breaks on stable ids, so input order, runner and worker count never change a
byte of the result.
"""

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from packer.catalog import Catalog
from packer.dedup import dedup_exact, drop_near_duplicates, find_conflicts, merge_overlaps
from packer.gates import Exclusion, apply_gates
from packer.order import order_records
from packer.records import Evidence, normalize_text, question_terms, text_facts
from packer.render import (
    block_body,
    block_header,
    framing_tokens,
    header_attributes,
    label_range,
    question_line,
    render_block,
    render_notes,
    render_user,
)
from packer.render import messages as render_messages
from packer.select import Costs, SelectionPolicy, select, title_key
from packer.tokens import TokenCounter
from packer.version import BUILDER_VERSION
from schemas import (
    ExclusionReason,
    ExclusionRecord,
    ManifestRow,
    PackingConfig,
    PromptMessage,
    Request,
)

R = ExclusionReason


def clear_memos() -> None:
    """Forget what this process memoized per distinct text, question, title and header.

    For a cold start in benchmarks and tests; token counts live in the
    `TokenCounter`, which a fresh instance empties.
    """
    text_facts.cache_clear()
    question_terms.cache_clear()
    header_attributes.cache_clear()
    title_key.cache_clear()


class PackError(ValueError):
    """The request cannot be packed at all (e.g. its question alone exceeds the limit)."""


@dataclass(frozen=True)
class PackResult:
    """Everything one request produces."""

    prompt: PromptMessage
    manifest: ManifestRow
    exclusions: list[ExclusionRecord]


@dataclass(frozen=True)
class _Limits:
    input_limit: int
    reserved_answer: int
    max_evidence_tokens: int | None


def _limits(request: Request, config: PackingConfig) -> _Limits:
    override = request.budget
    return _Limits(
        input_limit=(override and override.input_limit) or config.input_limit,
        reserved_answer=(
            override.reserved_answer
            if override is not None and override.reserved_answer is not None
            else config.reserved_answer
        ),
        max_evidence_tokens=(override and override.max_evidence_tokens)
        or config.max_evidence_tokens,
    )


def _dedup(
    records: list[Evidence], config: PackingConfig
) -> tuple[list[Evidence], dict[str, ExclusionReason], list[Exclusion]]:
    """Run the three dedup levels; return kept records, folded ids' reasons, near drops."""
    if not config.enable_dedup:
        return records, {}, []
    kept, folded = dedup_exact(records)
    folded_reason = {r.evidence_id: R.DUPLICATE_EXACT for r in folded}
    if len({r.document_id for r in kept}) == len(kept):
        return kept, folded_reason, []  # overlap and near-duplicates need two of one document
    kept, merged = merge_overlaps(kept)
    folded_reason.update({r.evidence_id: R.DUPLICATE_OVERLAP for r in merged})
    kept, near = drop_near_duplicates(kept, config.dedup)
    return kept, folded_reason, near


def _evidence_budget(
    request: Request, config: PackingConfig, limits: _Limits, tokens: TokenCounter
) -> tuple[int, int]:
    """(evidence budget, tokens of the evidence-free prompt) from the ledger.

    budget = input limit - rendered system text and question - reserved answer
    - safety margin, capped by `max_evidence_tokens`.
    """
    base = framing_tokens(tokens) + tokens.count(question_line(request.question))
    available = limits.input_limit - limits.reserved_answer - config.safety_margin - base
    if available < tokens.count(render_notes([], [], has_evidence=False)):
        raise PackError(
            f"question and instructions take {base} tokens: no room under input_limit "
            f"{limits.input_limit} with reserved_answer {limits.reserved_answer}"
        )
    if limits.max_evidence_tokens is not None:
        return min(available, limits.max_evidence_tokens), base
    return available, base


def _notes_reserve(
    conflicts: list[tuple[str, ...]], n_records: int, request: Request, tokens: TokenCounter
) -> int:
    """Tokens set aside for the label range and the notes, at their worst case."""
    widest = f"E{max(1, n_records)}"
    worst = render_notes([[widest] * len(g) for g in conflicts], request.facets, has_evidence=True)
    return tokens.count(worst) + tokens.count(label_range(n_records))


HEADER_ESTIMATE = 24
"""Typical tokens of a block's header and closing tag, for ranking before counting."""


class _BlockCosts:
    """Evidence blocks rendered and counted on demand, for selection's `Costs`.

    Each block also pays for its label, priced at the widest label of the
    request. The lower bound counts the text's whitespace-separated words: no
    tiktoken pre-token spans two of them, so each costs at least one token.
    """

    def __init__(
        self, records: list[Evidence], widest: str, dated: bool, tokens: TokenCounter
    ) -> None:
        self._records = records
        self._dated = dated
        self._tokens = tokens
        self._headers: dict[int, str] = {}
        self._bodies: dict[int, str] = {}
        self.body_tokens: dict[int, int] = {}
        self.label_cost = tokens.count(render_block(widest, ""))

    def _header(self, index: int) -> str:
        header = self._headers.get(index)
        if header is None:
            header = self._headers[index] = block_header(self._records[index], self._dated)
        return header

    def body(self, index: int) -> str:
        """The rendered body, kept: a block counted afresh is rendered once, not
        again for the prompt."""
        body = self._bodies.get(index)
        if body is None:
            body = self._bodies[index] = block_body(self._header(index), self._records[index].text)
        return body

    def exact(self, index: int) -> int:
        """The block's exact tokens, its label priced at the widest label.

        Header and text determine the body, so they key its count: a block seen
        before is neither rendered nor hashed again.
        """
        key = (self._header(index), self._records[index].text)
        n = self._tokens.count_rendered(key, lambda: self.body(index))
        self.body_tokens[index] = n
        return n + self.label_cost

    def _upper(self, index: int) -> int:
        """At least the block's UTF-8 bytes (each token is one byte or more), unrendered."""
        text = self._records[index].text
        escapes = text.count("&") + text.count("<") + text.count(">")
        header = len(self._header(index).encode("utf-8"))
        return header + len(text.encode("utf-8")) + 4 * escapes + 16 + self.label_cost

    def costs(self) -> Costs:
        words = [r.facts.words for r in self._records]
        return Costs(
            lower=[n + 2 + self.label_cost for n in words],
            estimate=[
                max(n, len(r.text) // 4) + HEADER_ESTIMATE + self.label_cost
                for n, r in zip(words, self._records, strict=True)
            ],
            exact=self.exact,
            upper=self._upper,
        )


@dataclass
class _Rendered:
    """One rendering of the chosen evidence, with its exact token counts."""

    ordered: list[Evidence]
    labels: dict[str, str]
    uncovered: list[str]
    user: str
    block_tokens: dict[str, int]
    prompt_tokens: int


def _render(
    chosen: list[Evidence],
    bodies: dict[str, tuple[str, int]],
    conflicts: list[tuple[str, ...]],
    request: Request,
    config: PackingConfig,
    tokens: TokenCounter,
    base: int,
) -> _Rendered:
    """Render the chosen evidence; prompt tokens are `base` plus the counts of the
    parts the evidence adds (see `packer.render`: the parts add up exactly)."""
    ordered = order_records(chosen, config.order_policy)
    labels = {r.evidence_id: f"E{i}" for i, r in enumerate(ordered, start=1)}
    conflict_labels = [
        [labels[e] for e in group if e in labels]
        for group in conflicts
        if sum(e in labels for e in group) > 1
    ]
    uncovered = sorted(set(request.facets) - {f for r in ordered for f in r.facets})
    notes = render_notes(conflict_labels, uncovered, has_evidence=bool(ordered))
    blocks = []
    block_tokens = {}
    for record in ordered:
        prefix = render_block(labels[record.evidence_id], "")
        body, body_tokens = bodies[record.evidence_id]
        blocks.append(prefix + body)
        block_tokens[record.evidence_id] = tokens.count(prefix) + body_tokens
    user = render_user(blocks, notes, request.question)
    added = sum(block_tokens.values()) + tokens.count(label_range(len(blocks)))
    added += tokens.count(notes) if notes else 0
    return _Rendered(ordered, labels, uncovered, user, block_tokens, base + added)


def pack_request(
    request: Request,
    catalog: Catalog,
    config: PackingConfig,
    tokens: TokenCounter,
    event_time: datetime | None = None,
    catalog_version: str = "",
) -> PackResult:
    """Gate, deduplicate, select, order, label and render one request.

    `event_time` stands in when the request carries neither `event_time` nor
    `as_of` (the run's start in batch, the publish time in streaming).
    Raises `PackError` when even an evidence-free prompt cannot fit.
    """
    event_time = request.event_time or event_time
    as_of = request.as_of or event_time
    if as_of is None:
        raise PackError("request has no as_of or event_time, and none was supplied")
    limits = _limits(request, config)
    by_id = {c.evidence_id: c for c in request.candidates}
    in_id_order = [by_id[e] for e in sorted(by_id)]

    gated, exclusions = apply_gates(request, in_id_order, catalog, as_of)
    kept, folded_reason, near = _dedup(gated, config)
    exclusions.extend(near)
    kept.sort(key=Evidence.rank_key)
    conflicts = find_conflicts(kept)

    budget, base = _evidence_budget(request, config, limits, tokens)
    widest = f"E{max(1, len(kept))}"
    blocks = _BlockCosts(kept, widest, request.history, tokens)
    selection = select(
        kept,
        blocks.costs(),
        request.facets if config.enable_facet_coverage else (),
        conflicts,
        SelectionPolicy(
            budget=max(0, budget - _notes_reserve(conflicts, len(kept), request, tokens)),
            weights=config.weights,
            per_document_cap=config.per_document_cap if config.enable_document_cap else None,
            facet_coverage=config.enable_facet_coverage,
            as_of=as_of,
            question_terms=question_terms(request.question),
            question=normalize_text(request.question),
        ),
    )
    left_out = {kept[i].evidence_id: reason for i, reason in selection.left_out.items()}
    chosen = [kept[i] for i in selection.chosen]
    bodies = {
        kept[i].evidence_id: (blocks.body(i), blocks.body_tokens[i]) for i in selection.chosen
    }
    rendered = _render(chosen, bodies, conflicts, request, config, tokens, base)
    # The exact count of the whole prompt is the admission control: should the
    # notes outgrow their reserve, the last chosen (least valuable) block goes.
    while chosen and (
        rendered.prompt_tokens + limits.reserved_answer + config.safety_margin > limits.input_limit
        or rendered.prompt_tokens - base > budget
    ):
        left_out[chosen.pop().evidence_id] = R.OVER_BUDGET
        rendered = _render(chosen, bodies, conflicts, request, config, tokens, base)

    for record in kept:
        reason = left_out.get(record.evidence_id)
        if reason is None:
            continue
        exclusions.append(Exclusion(record.candidate, reason, f"{reason.value} at budget {budget}"))
        exclusions.extend(
            Exclusion(by_id[f], folded_reason[f], f"folded into {record.evidence_id}")
            for f in record.derived_from
        )
    return _result(
        request,
        config,
        limits,
        event_time,
        as_of,
        rendered,
        conflicts,
        exclusions,
        base,
        budget,
        tokens.name,
        catalog_version,
    )


def _result(
    request: Request,
    config: PackingConfig,
    limits: _Limits,
    event_time: datetime | None,
    as_of: datetime,
    rendered: _Rendered,
    conflicts: list[tuple[str, ...]],
    exclusions: list[Exclusion],
    base: int,
    budget: int,
    tokenizer: str,
    catalog_version: str,
) -> PackResult:
    """Assemble the prompt message and the audit rows (ids only, no evidence text).

    Each output is validated once, from plain data, nested rows included.
    """
    ordered, labels = rendered.ordered, rendered.labels
    messages = [{"content": text, "role": role} for role, text in render_messages(rendered.user)]
    prompt_sha = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
    config_hash = config.config_hash()
    exclusions.sort(key=lambda x: x.candidate.evidence_id)
    counts = Counter(x.reason.value for x in exclusions)
    prompt = PromptMessage.model_validate(
        {
            "request_id": request.request_id,
            "tenant_id": request.tenant_id,
            "model": config.model,
            "messages": messages,
            "label_map": [
                {"label": labels[r.evidence_id], "evidence_id": r.evidence_id} for r in ordered
            ],
            "prompt_tokens": rendered.prompt_tokens,
            "builder_version": BUILDER_VERSION,
            "config_hash": config_hash,
        }
    )
    evidence = [
        {
            "label": labels[r.evidence_id],
            "evidence_id": r.evidence_id,
            "document_id": r.document_id,
            "revision_id": r.revision_id,
            "chunk_id": r.candidate.chunk_id or f"span:{r.span[0]}-{r.span[1]}",  # type: ignore[index]
            "source_url": r.candidate.source_url or "",
            "tokens": rendered.block_tokens[r.evidence_id],
            "facets": r.facets,
            "derived_from": sorted(r.derived_from),
        }
        for r in ordered
    ]
    manifest = ManifestRow.model_validate(
        {
            "request_id": request.request_id,
            "tenant_id": request.tenant_id,
            "event_time": event_time,
            "as_of": as_of,
            "builder_version": BUILDER_VERSION,
            "config_hash": config_hash,
            "model": config.model,
            "tokenizer": tokenizer,
            "budget": {
                "input_limit": limits.input_limit,
                "reserved_answer": limits.reserved_answer,
                "safety_margin": config.safety_margin,
                "available": budget,
                "used": rendered.prompt_tokens - base,
                "prompt_tokens": rendered.prompt_tokens,
            },
            "order_policy": config.order_policy,
            "candidates_in": len(request.candidates),
            "evidence": evidence,
            "uncovered_facets": rendered.uncovered,
            "conflicts": [
                {"evidence_ids": g, "labels": [labels[e] for e in g if e in labels]}
                for g in conflicts
            ],
            "excluded": [{"reason": r, "count": n} for r, n in sorted(counts.items())],
            "prompt_sha256": prompt_sha,
            "catalog_version": catalog_version,
        }
    )
    records = [
        ExclusionRecord(
            request_id=request.request_id,
            tenant_id=request.tenant_id,
            event_time=event_time,
            evidence_id=x.candidate.evidence_id,
            document_id=x.candidate.document_id,
            revision_id=x.candidate.revision_id,
            reason=x.reason,
            detail=x.detail,
            builder_version=BUILDER_VERSION,
        )
        for x in exclusions
    ]
    return PackResult(prompt=prompt, manifest=manifest, exclusions=records)
