"""`pack_request`: one request in, its prompt, manifest and exclusions out.

Deterministic: candidates are processed in evidence-id order and every tie
breaks on stable ids, so input order, runner and worker count never change a
byte of the result.
"""

from dataclasses import dataclass, field, replace
from datetime import datetime

from packer.answer_evidence import answer_kind
from packer.catalog import Catalog
from packer.dedup import deduplicate
from packer.gates import Exclusion, apply_gates
from packer.layout import BlockCosts, PromptLayout
from packer.order import order_records
from packer.outputs import Limits, PackDecisions, PackResult, Rendered, assemble
from packer.question import Question, read_question
from packer.records import Evidence
from packer.resolution import Resolved, resolve
from packer.runtime import Memos, PackerRuntime
from packer.select import Selection, SelectionPolicy, select
from packer.subjects import named_days, publisher_of, publisher_segments
from packer.units import unit_span
from schemas import Candidate, ExclusionReason, PackingConfig, Request

__all__ = ["PackError", "PackResult", "facets_untagged", "layout_of", "pack_request"]


class PackError(ValueError):
    """The request cannot be packed at all (e.g. its question alone exceeds the limit)."""


def _limits(request: Request, config: PackingConfig) -> Limits:
    override = request.budget
    return Limits(
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
    request: Request, config: PackingConfig, limits: Limits, layout: PromptLayout
) -> tuple[int, int]:
    """(evidence budget, tokens of the evidence-free prompt) from the ledger.

    budget = input limit - rendered system text and question - reserved answer
    - reasoning headroom - safety margin, capped by `max_evidence_tokens`. Notes are paid from it:
    at least what the shortest evidence-free notes take.
    """
    least = layout.least_notes_tokens(len(set(request.facets)))
    base = layout.base_tokens(request.question)
    kept = limits.reserved_answer + config.reasoning_headroom + config.safety_margin
    available = limits.input_limit - kept - base
    if available < least:
        raise PackError(
            f"question and instructions take {base} tokens: no room under input_limit "
            f"{limits.input_limit} with reserved_answer {limits.reserved_answer}"
            + (
                f" and reasoning_headroom {config.reasoning_headroom}"
                if config.reasoning_headroom
                else ""
            )
        )
    if limits.max_evidence_tokens is not None:
        return max(least, min(available, limits.max_evidence_tokens)), base
    return available, base


def facets_untagged(request: Request) -> bool:
    """True when the request names facets and none of its candidates carries
    `query_facets`: nothing says which facet a passage answers, so coverage is unknown.

    Such a request is packed as if it named no facet (no "Required facets without
    evidence" note, no uncovered facet in the manifest, no coverage preference in
    selection) and its manifest says `facets_untagged`. Rejected: declaring every facet
    uncovered, which told the model a facet lacked evidence when a passage answered it
    and failed correct answers in `evpack verify` for the packer's gap.
    """
    return bool(request.facets) and not any(c.query_facets for c in request.candidates)


def layout_of(
    config: PackingConfig, runtime: PackerRuntime, budget: int | None = None
) -> PromptLayout:
    """The prompt layout the config asks for, with its prompt format's chat framing; for
    an evidence `budget` below `compact_framing_below`, the compact framing. The
    evidence-free prompt is the same in both, so the budget is too. The runtime's own
    (`PackerRuntime.layouts`)."""
    framing = config.format.framing
    compact = budget is not None and budget < config.compact_framing_below
    return runtime.layouts(config.block_attributes, config.title_words, framing, compact)


@dataclass(frozen=True)
class _Frame:
    """What every rendering of one request shares."""

    request: Request
    question: Question
    config: PackingConfig
    layout: PromptLayout
    conflicts: list[tuple[str, ...]]
    base: int
    """Tokens of the evidence-free prompt without notes."""
    budget: int
    """The evidence budget: blocks and notes."""


def _render(chosen: list[Evidence], bodies: dict[str, tuple[str, int]], frame: _Frame) -> Rendered:
    """Render the chosen evidence with the notes it needs, counted exactly.

    Prompt tokens are `base` plus the counts of the parts the evidence and
    notes add (the parts add up exactly, see `packer.layout`). A conflict note
    names only packed members, and says so when a member was left out (a group
    with one member packed is noted too: never one side silently); the
    uncovered facets are listed as far as the room left allows. `fits` says
    whether the whole stays within the budget.
    """
    layout = frame.layout
    ordered = order_records(chosen, frame.config.order_policy)
    labels = {r.evidence_id: f"E{i}" for i, r in enumerate(ordered, start=1)}
    shown = [([labels[e] for e in g if e in labels], len(g)) for g in frame.conflicts]
    conflict_labels = [g for g, _ in shown if g]
    left_out = [len(g) < size for g, size in shown if g]
    covered = {f for r in ordered for f in r.facets}
    uncovered = sorted(f for f in set(frame.request.facets) if f not in covered)
    blocks = []
    block_tokens = {}
    for record in ordered:
        label = labels[record.evidence_id]
        body, body_tokens = bodies[record.evidence_id]
        blocks.append(layout.block(label, body))
        block_tokens[record.evidence_id] = layout.label_tokens(label) + body_tokens
    room = frame.budget - sum(block_tokens.values())
    notes, note_tokens, whole = layout.notes_within(
        conflict_labels, uncovered, room, bool(ordered), left_out
    )
    added = sum(block_tokens.values()) + note_tokens
    fits = added <= frame.budget and whole
    user = layout.user(blocks, notes, frame.request.question)
    return Rendered(
        ordered, labels, uncovered, conflict_labels, user, block_tokens, frame.base + added, fits
    )


@dataclass
class _Survivors:
    """The records that passed the gates, dedup and resolution, and the exclusions so far."""

    kept: list[Evidence]
    resolved: Resolved
    by_id: dict[str, Candidate]
    folded_reason: dict[str, ExclusionReason]
    exclusions: list[Exclusion] = field(default_factory=list)

    def exclude(self, record: Evidence, reason: ExclusionReason, detail: str) -> None:
        """A record left out, and every candidate folded into it: they share its fate."""
        self.exclusions.append(Exclusion(record.candidate, reason, detail))
        self.exclusions.extend(
            Exclusion(self.by_id[f], self.folded_reason[f], f"folded into {record.evidence_id}")
            for f in record.derived_from
        )


def _survivors(
    request: Request,
    question: Question,
    catalog: Catalog,
    config: PackingConfig,
    as_of: datetime,
    memos: Memos,
) -> _Survivors:
    """Gate, deduplicate and resolve the request's candidates (in evidence-id order)."""
    by_id = {c.evidence_id: c for c in request.candidates}
    in_id_order = [by_id[e] for e in sorted(by_id)]
    gated, exclusions = apply_gates(request, in_id_order, catalog, as_of, memos)
    dedup = deduplicate(gated, config.dedup, memos, config.enable_dedup, question)
    resolved = resolve(
        dedup.conflicts, dedup.conflict_kinds, dedup.kept, catalog, request, config.resolution
    )
    survivors = _Survivors([], resolved, by_id, dedup.folded_reason, exclusions)
    for record in dedup.kept:
        ruled_out = resolved.excluded.get(record.evidence_id)
        if ruled_out is None:
            survivors.kept.append(record)
        else:
            survivors.exclude(record, *ruled_out)
    return survivors


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
    untagged = facets_untagged(request)
    if untagged:
        request = request.model_copy(update={"facets": ()})
    limits = _limits(request, config)
    layout = layout_of(config, runtime)
    question = read_question(request.question)
    survivors = _survivors(request, question, catalog, config, as_of, runtime.memos)
    budget, base = _evidence_budget(request, config, limits, layout)
    layout = layout_of(config, runtime, budget)
    frame = _Frame(request, question, config, layout, survivors.resolved.conflicts, base, budget)
    rendered, left_out = _choose(survivors.kept, frame, as_of, runtime.memos)
    _name_left_out_sides(left_out, rendered, frame.conflicts)
    for record in survivors.kept:
        reason = left_out.get(record.evidence_id)
        if reason is not None:
            survivors.exclude(record, reason, f"{reason.value} at budget {budget}")
    packed = PackDecisions(
        request=request,
        config=config,
        limits=limits,
        event_time=event_time,
        as_of=as_of,
        rendered=rendered,
        resolved=survivors.resolved,
        exclusions=survivors.exclusions,
        base=base,
        budget=budget,
        tokenizer=runtime.tokens.name,
        catalog_version=catalog_version,
        facets_untagged=untagged,
    )
    return assemble(packed)


def _name_left_out_sides(
    left_out: dict[str, ExclusionReason], rendered: Rendered, conflicts: list[tuple[str, ...]]
) -> None:
    """A member of a conflict group left out while another is packed is left out as
    `conflict_side_over_budget` (whatever the room it lacked: the budget, its document's
    cap, its size), so the manifest names the side the prompt's note says is missing."""
    for group in conflicts:
        if any(e in rendered.labels for e in group):
            for e in group:
                if e in left_out:
                    left_out[e] = ExclusionReason.CONFLICT_SIDE_OVER_BUDGET


def _policy(kept: list[Evidence], frame: _Frame, widest: str, as_of: datetime) -> SelectionPolicy:
    """The selection knobs for this request: the config's, and the budget less the
    notes known before selection. Rejected: parsing only the addresses that hold one
    of the question's possible publisher mentions (the mentions cost more a request,
    and the test more an address, than parsing: 2.5-5 against 0.1-2.2 µs a candidate);
    a memo of each address's publisher in the runtime (no change measured in four
    interleaved rounds, warm or cold: `urlsplit` keeps a cache of its own)."""
    config, layout, question = frame.config, frame.layout, frame.question
    conflict_note, conflict_member, conflict_alone, conflict_lacking = layout.conflict_note_tokens(
        widest
    )
    publishers = (  # no address is parsed unless the rule is on
        {publisher_of(r.candidate.source_url or "") for r in kept} - {""}
        if config.enable_source_links
        else set()
    )
    stems = config.enable_term_stems
    sources = publisher_segments(question, publishers, stems) if publishers else {}
    return SelectionPolicy(
        budget=max(0, frame.budget - _reserved_for_notes(kept, frame)),
        evidence_budget=frame.budget,
        weights=config.weights,
        per_document_cap=config.per_document_cap if config.enable_document_cap else None,
        facet_coverage=config.enable_facet_coverage,
        as_of=as_of,
        question_terms=question.terms,
        question_stems=question.stems if stems else question.terms,
        question=question.joined,
        conflict_note=conflict_note,
        conflict_member=conflict_member,
        conflict_alone=conflict_alone,
        conflict_lacking=conflict_lacking,
        conflict_sides=config.enable_sentence_units and config.enable_conflict_sides,
        answer_kind=answer_kind(question),
        claim_units=config.enable_sentence_units and config.enable_claim_units,
        sentence_units=config.enable_sentence_units,
        subject_links=config.enable_subject_links,
        named_sources=sources,
        named_days=named_days(question) if sources else frozenset(),
        calibrated_relevance=config.enable_calibrated_relevance,
        first=frozenset(
            name
            for name, on in (
                ("pairs", config.enable_pairs_first),
                ("sides", config.enable_sides_first),
                ("answers", config.enable_answers_first),
                ("names", config.enable_full_names),
            )
            if on
        ),
    )


def _reserved_for_notes(kept: list[Evidence], frame: _Frame) -> int:
    """Tokens set aside before selection for what will surely be rendered.

    The note on facets that no kept candidate carries (they stay uncovered
    whatever is chosen), listed in at most half the budget. Conflict notes are
    paid when their second member is chosen; the rest is checked exactly after
    selection.
    """
    carried = {f for r in kept for f in r.facets}
    hopeless = sorted(f for f in set(frame.request.facets) if f not in carried)
    return frame.layout.facets_tokens_within(hopeless, frame.budget // 2)


def _choose(
    kept: list[Evidence], frame: _Frame, as_of: datetime, memos: Memos
) -> tuple[Rendered, dict[str, ExclusionReason]]:
    """Select and render under the budget: what is shown, and why the rest is not."""
    config, layout = frame.config, frame.layout
    widest = f"E{max(1, len(kept))}"
    costs = BlockCosts.of(kept, layout, widest, frame.request.history)
    facets = frame.request.facets if config.enable_facet_coverage else ()

    def chosen_and_rendered(
        policy: SelectionPolicy,
    ) -> tuple[Selection, list[Evidence], dict[str, tuple[str, int]], Rendered]:
        """Select under `policy`, then render what was chosen."""
        selection = select(kept, costs, facets, frame.conflicts, policy, memos)
        chosen = [_as_packed(kept[i], selection.units.get(i), memos) for i in selection.chosen]
        bodies = {
            r.evidence_id: (
                layout.body(costs.headers[i], r.text),
                selection.block_tokens[i] - costs.label_cost,
            )
            for i, r in zip(selection.chosen, chosen, strict=True)
        }
        return selection, chosen, bodies, _render(chosen, bodies, frame)

    policy = _policy(kept, frame, widest, as_of)
    selection, chosen, bodies, rendered = chosen_and_rendered(policy)
    if not rendered.fits and chosen:
        # The notes outgrew what selection paid for (a facet left uncovered after all):
        # select again with that overflow set aside. Rejected: dropping the last blocks
        # alone, which emptied packets whose one block filled the budget exactly.
        shortest = layout.shortest_facets_tokens(len(rendered.uncovered))
        overflow = max(rendered.prompt_tokens - frame.base - frame.budget, shortest, 1)
        smaller = replace(policy, budget=max(0, policy.budget - overflow))
        selection, chosen, bodies, rendered = chosen_and_rendered(smaller)
    left_out = {kept[i].evidence_id: reason for i, reason in selection.left_out.items()}
    # The exact count of the whole prompt is the admission control: should the
    # notes still outgrow what selection paid for, the last chosen (least valuable) block goes.
    while chosen and not rendered.fits:
        left_out[chosen.pop().evidence_id] = ExclusionReason.OVER_BUDGET
        rendered = _render(chosen, bodies, frame)
    return rendered, left_out


def _as_packed(record: Evidence, unit: tuple[int, int] | None, memos: Memos) -> Evidence:
    """The record as packed: whole, or cut to a run of whole sentences."""
    if unit is None:
        return record
    text = record.text[unit[0] : unit[1]]
    located = unit_span(record.span, record.text, unit)
    return replace(record, text=text, facts=memos.text_facts(text), unit=unit, unit_span=located)
