"""`pack_request`: one request in, its prompt, manifest and exclusions out.

Deterministic: candidates are processed in evidence-id order and every tie
breaks on stable ids, so input order, runner and worker count never change a
byte of the result.
"""

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, replace
from datetime import datetime

from packer.catalog import Catalog
from packer.dedup import deduplicate
from packer.gates import Exclusion, apply_gates
from packer.layout import BlockCosts, PromptLayout
from packer.order import order_records
from packer.records import Evidence, canonical_words, question_terms, sha256_hex
from packer.resolution import Resolved, resolve
from packer.runtime import Memos, PackerRuntime
from packer.select import Selection, SelectionPolicy, select
from packer.tokens import TokenCounter
from packer.units import unit_span
from packer.version import BUILDER_VERSION
from schemas import (
    ExclusionReason,
    ExclusionRecord,
    ManifestRow,
    PackingConfig,
    PromptMessage,
    Request,
)
from schemas.prompt_formats import FORMATS


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


def _evidence_budget(
    request: Request, config: PackingConfig, limits: _Limits, layout: PromptLayout, least: int
) -> tuple[int, int]:
    """(evidence budget, tokens of the evidence-free prompt) from the ledger.

    budget = input limit - rendered system text and question - reserved answer
    - safety margin, capped by `max_evidence_tokens`. Notes are paid from it:
    `least` is what the shortest evidence-free notes take.
    """
    base = layout.base_tokens(request.question)
    available = limits.input_limit - limits.reserved_answer - config.safety_margin - base
    if available < least:
        raise PackError(
            f"question and instructions take {base} tokens: no room under input_limit "
            f"{limits.input_limit} with reserved_answer {limits.reserved_answer}"
        )
    if limits.max_evidence_tokens is not None:
        return max(least, min(available, limits.max_evidence_tokens)), base
    return available, base


def layout_of(config: PackingConfig, tokens: TokenCounter) -> PromptLayout:
    """The prompt layout the config asks for, with its prompt format's chat framing."""
    framing = FORMATS[config.prompt_format].framing
    return PromptLayout(tokens, config.block_attributes, config.title_words, framing)


@dataclass
class _Rendered:
    """One rendering of the chosen evidence, with its exact token counts."""

    ordered: list[Evidence]
    labels: dict[str, str]
    uncovered: list[str]
    conflict_labels: list[list[str]]
    user: str
    block_tokens: dict[str, int]
    prompt_tokens: int
    fits: bool


def _render(
    chosen: list[Evidence],
    bodies: dict[str, tuple[str, int]],
    conflicts: list[tuple[str, ...]],
    request: Request,
    config: PackingConfig,
    layout: PromptLayout,
    base: int,
    budget: int,
) -> _Rendered:
    """Render the chosen evidence with the notes it needs, counted exactly.

    Prompt tokens are `base` plus the counts of the parts the evidence and
    notes add (the parts add up exactly, see `packer.layout`). A conflict note
    names only packed members; the uncovered facets are listed as far as the
    room left allows. `fits` says whether the whole stays within `budget`.
    """
    ordered = order_records(chosen, config.order_policy)
    labels = {r.evidence_id: f"E{i}" for i, r in enumerate(ordered, start=1)}
    conflict_labels = [
        [labels[e] for e in group if e in labels]
        for group in conflicts
        if sum(e in labels for e in group) > 1
    ]
    covered = {f for r in ordered for f in r.facets}
    uncovered = sorted(f for f in set(request.facets) if f not in covered)
    blocks = []
    block_tokens = {}
    for record in ordered:
        label = labels[record.evidence_id]
        body, body_tokens = bodies[record.evidence_id]
        blocks.append(layout.block(label, body))
        block_tokens[record.evidence_id] = layout.label_tokens(label) + body_tokens
    head = layout.notes(conflict_labels, "", has_evidence=bool(ordered))
    added = sum(block_tokens.values()) + layout.count(head)
    facets = layout.facets_within(uncovered, budget - added) if uncovered else ""
    added += layout.count(facets)
    fits = added <= budget and (bool(facets) or not uncovered)
    user = layout.user(blocks, head + facets, request.question)
    return _Rendered(
        ordered, labels, uncovered, conflict_labels, user, block_tokens, base + added, fits
    )


def _least_notes(request: Request, layout: PromptLayout) -> int:
    """Tokens of the shortest notes an evidence-free prompt can have."""
    shortest = layout.facets_note([], len(set(request.facets))) if request.facets else ""
    return layout.count(layout.notes([], shortest, has_evidence=False))


def _reserved_for_notes(
    kept: list[Evidence], request: Request, layout: PromptLayout, budget: int
) -> int:
    """Tokens set aside before selection for what will surely be rendered.

    The note on facets that no kept candidate carries (they stay uncovered
    whatever is chosen), listed in at most half the budget. Conflict notes are
    paid when their second member is chosen; the rest is checked exactly after
    selection.
    """
    carried = {f for r in kept for f in r.facets}
    hopeless = sorted(f for f in set(request.facets) if f not in carried)
    return layout.count(layout.facets_within(hopeless, budget // 2)) if hopeless else 0


def _exclude(
    record: Evidence,
    reason: ExclusionReason,
    detail: str,
    by_id: dict[str, object],
    folded_reason: dict[str, ExclusionReason],
) -> list[Exclusion]:
    """A record left out, and every candidate folded into it: they share its fate."""
    return [
        Exclusion(record.candidate, reason, detail),
        *(
            Exclusion(by_id[f], folded_reason[f], f"folded into {record.evidence_id}")  # type: ignore[arg-type]
            for f in record.derived_from
        ),
    ]


def pack_request(
    request: Request,
    catalog: Catalog,
    config: PackingConfig,
    runtime: PackerRuntime,
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
    layout = layout_of(config, runtime.tokens)
    memos = runtime.memos
    by_id = {c.evidence_id: c for c in request.candidates}
    in_id_order = [by_id[e] for e in sorted(by_id)]

    gated, exclusions = apply_gates(request, in_id_order, catalog, as_of, memos)
    terms = question_terms(request.question)
    dedup = deduplicate(gated, config.dedup, memos, config.enable_dedup, request.question)
    folded_reason = dedup.folded_reason
    resolved = resolve(
        dedup.conflicts, dedup.conflict_kinds, dedup.kept, catalog, request, config.resolution
    )
    kept, conflicts = [], resolved.conflicts
    for record in dedup.kept:
        ruled_out = resolved.excluded.get(record.evidence_id)
        if ruled_out is None:
            kept.append(record)
        else:
            exclusions.extend(_exclude(record, *ruled_out, by_id, folded_reason))

    budget, base = _evidence_budget(request, config, limits, layout, _least_notes(request, layout))
    widest = f"E{max(1, len(kept))}"
    costs = BlockCosts.of(kept, layout, widest, request.history)
    member = layout.count(layout.conflict_note([widest, widest])) - layout.count(
        layout.conflict_note([widest])
    )
    policy = SelectionPolicy(
        budget=max(0, budget - _reserved_for_notes(kept, request, layout, budget)),
        evidence_budget=budget,
        weights=config.weights,
        per_document_cap=config.per_document_cap if config.enable_document_cap else None,
        facet_coverage=config.enable_facet_coverage,
        as_of=as_of,
        question_terms=terms,
        question=" ".join(canonical_words(request.question)),
        conflict_note=layout.count(layout.conflict_note([widest, widest])),
        conflict_member=member,
        sentence_units=config.enable_sentence_units,
        subject_links=config.enable_subject_links,
    )
    facets = request.facets if config.enable_facet_coverage else ()

    def chosen_and_rendered(
        policy: SelectionPolicy,
    ) -> tuple[Selection, list[Evidence], dict[str, tuple[str, int]], _Rendered]:
        """Select under `policy`, then render what was chosen."""
        selection = select(kept, costs, facets, conflicts, policy, memos)
        chosen = [_as_packed(kept[i], selection.units.get(i), memos) for i in selection.chosen]
        bodies = {
            r.evidence_id: (
                layout.body(costs.headers[i], r.text),
                selection.block_tokens[i] - costs.label_cost,
            )
            for i, r in zip(selection.chosen, chosen, strict=True)
        }
        rendered = _render(chosen, bodies, conflicts, request, config, layout, base, budget)
        return selection, chosen, bodies, rendered

    selection, chosen, bodies, rendered = chosen_and_rendered(policy)
    if not rendered.fits and chosen:
        # The notes outgrew what selection paid for (a facet left uncovered after all):
        # select again with that overflow set aside. Rejected: dropping the last blocks
        # alone, which emptied packets whose one block filled the budget exactly.
        shortest = layout.count(layout.facets_note([], len(rendered.uncovered)))
        overflow = max(rendered.prompt_tokens - base - budget, shortest, 1)
        smaller = replace(policy, budget=max(0, policy.budget - overflow))
        selection, chosen, bodies, rendered = chosen_and_rendered(smaller)
    left_out = {kept[i].evidence_id: reason for i, reason in selection.left_out.items()}
    # The exact count of the whole prompt is the admission control: should the
    # notes still outgrow what selection paid for, the last chosen (least valuable) block goes.
    while chosen and not rendered.fits:
        left_out[chosen.pop().evidence_id] = ExclusionReason.OVER_BUDGET
        rendered = _render(chosen, bodies, conflicts, request, config, layout, base, budget)

    for record in kept:
        reason = left_out.get(record.evidence_id)
        if reason is not None:
            detail = f"{reason.value} at budget {budget}"
            exclusions.extend(_exclude(record, reason, detail, by_id, folded_reason))
    return _result(
        request,
        config,
        limits,
        event_time,
        as_of,
        rendered,
        resolved,
        exclusions,
        base,
        budget,
        runtime.tokens.name,
        catalog_version,
    )


def _as_packed(record: Evidence, unit: tuple[int, int] | None, memos: Memos) -> Evidence:
    """The record as packed: whole, or cut to a run of whole sentences."""
    if unit is None:
        return record
    text = record.text[unit[0] : unit[1]]
    located = unit_span(record.span, record.text, unit)
    return replace(record, text=text, facts=memos.text_facts(text), unit=unit, unit_span=located)


def _result(
    request: Request,
    config: PackingConfig,
    limits: _Limits,
    event_time: datetime | None,
    as_of: datetime,
    rendered: _Rendered,
    resolved: Resolved,
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
    messages = [
        {"content": text, "role": role} for role, text in PromptLayout.messages(rendered.user)
    ]
    prompt_sha = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
    config_hash = config.config_hash()
    exclusions.sort(key=lambda x: x.candidate.evidence_id)
    counts = Counter(x.reason.value for x in exclusions)
    prompt = PromptMessage.model_validate(
        {
            "request_id": request.request_id,
            "tenant_id": request.tenant_id,
            "model": config.format_model,
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
            **_shown(r),
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
            "model": config.format_model,
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
                {"evidence_ids": g, "labels": [labels[e] for e in g if e in labels], "rules": k}
                for g, k in zip(resolved.conflicts, resolved.kinds, strict=True)
            ],
            "resolutions": resolved.rows,
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


def _shown(record: Evidence) -> dict:
    """What of the candidate a block shows: whole, or a run of sentences located exactly."""
    if record.unit is None:
        span, digest, partial = record.span, record.facts.sha256 or "", False
    else:
        span, digest, partial = record.unit_span, sha256_hex(record.text), True
    return {
        "partial": partial,
        "span_start": span[0] if span else None,
        "span_end": span[1] if span else None,
        "text_sha256": digest,
    }
