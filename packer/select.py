"""Selection under the evidence budget: facet coverage first, then utility per token.

Greedy on utility per token is evaluated lazily (a max-heap of stale priorities):
the dynamic terms (new facet, new source, redundancy) only lose value as the
packet grows, so a popped priority that still beats the next stale one is the
true best. Ties break on the rank order (score, then evidence id).
"""

import heapq
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from packer.records import Evidence
from schemas import ExclusionReason, UtilityWeights

R = ExclusionReason


@dataclass(frozen=True, slots=True)
class SelectionInput:
    """One selectable record with its estimated block tokens."""

    record: Evidence
    tokens: int


@dataclass(slots=True)
class Selection:
    """Chosen records in the order they were chosen, and why the rest were not."""

    chosen: list[SelectionInput] = field(default_factory=list)
    left_out: dict[str, ExclusionReason] = field(default_factory=dict)
    uncovered_facets: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SelectionPolicy:
    """The knobs of one selection run, taken from the packing config."""

    budget: int
    weights: UtilityWeights
    per_document_cap: int | None
    facet_coverage: bool
    as_of: datetime


class _State:
    """The growing packet, and each item's utility against it."""

    def __init__(self, items: Sequence[SelectionInput], policy: SelectionPolicy) -> None:
        self.items = items
        self.policy = policy
        self.remaining = policy.budget
        self.covered: set[str] = set()
        self.docs: Counter[str] = Counter()
        self.words: set[str] = set()
        self.chosen: list[int] = []
        self.taken: set[int] = set()
        self._words = [set(i.record.normalized.split()) for i in items]
        self._static = self._static_utilities()

    def _static_utilities(self) -> list[float]:
        w = self.policy.weights
        scores = [i.record.score for i in self.items]
        low, high = min(scores, default=0.0), max(scores, default=0.0)
        span = high - low
        out = []
        for item in self.items:
            record = item.record
            relevance = (record.score - low) / span if span > 0 else 1.0
            authority = record.candidate.authority or 0.0
            recency = 0.0
            if record.effective_at is not None:
                days = max(0.0, (self.policy.as_of - record.effective_at).total_seconds() / 86400)
                recency = 1.0 / (1.0 + days / 365.0)
            out.append(
                w.relevance * relevance
                + w.authority * authority
                + w.recency * recency
                - w.token_cost * item.tokens / max(1, self.policy.budget)
            )
        return out

    def priority(self, index: int) -> float:
        """Utility per token of item `index` against the current packet."""
        w = self.policy.weights
        item = self.items[index]
        record = item.record
        facets = record.facets
        new_facet = len(set(facets) - self.covered) / len(facets) if facets else 0.0
        new_source = 0.0 if self.docs[record.document_id] else 1.0
        words = self._words[index]
        redundancy = len(words & self.words) / len(words) if words else 0.0
        utility = (
            self._static[index]
            + w.new_facet * new_facet
            + w.new_source * new_source
            - w.redundancy * redundancy
        )
        return max(utility, 1e-9) / max(1, item.tokens)

    def capped(self, index: int) -> bool:
        cap = self.policy.per_document_cap
        return cap is not None and self.docs[self.items[index].record.document_id] >= cap

    def fits(self, index: int) -> bool:
        return self.items[index].tokens <= self.remaining

    def take(self, index: int) -> None:
        record = self.items[index].record
        self.remaining -= self.items[index].tokens
        self.covered.update(record.facets)
        self.docs[record.document_id] += 1
        self.words |= self._words[index]
        self.chosen.append(index)
        self.taken.add(index)

    def eligible(self, index: int) -> bool:
        return index not in self.taken and not self.capped(index) and self.fits(index)


def _take_with_partners(state: _State, index: int, partners: dict[int, list[int]]) -> None:
    """Take an item, then its conflict partners if they fit: both sides stay visible."""
    state.take(index)
    for other in partners.get(index, ()):
        if state.eligible(other):
            state.take(other)


def select(
    items: Sequence[SelectionInput],
    required_facets: Sequence[str],
    conflicts: Sequence[Sequence[str]],
    policy: SelectionPolicy,
) -> Selection:
    """Choose which records fill the budget. `items` must be in rank order."""
    state = _State(items, policy)
    index_of = {item.record.evidence_id: i for i, item in enumerate(items)}
    partners: dict[int, list[int]] = {}
    for group in conflicts:
        members = [index_of[e] for e in group if e in index_of]
        for m in members:
            partners[m] = [o for o in members if o != m]

    if policy.facet_coverage:
        for facet in sorted(set(required_facets)):
            if facet in state.covered:
                continue
            options = [
                i
                for i, item in enumerate(items)
                if facet in item.record.facets and state.eligible(i)
            ]
            if options:
                best = max(options, key=lambda i: (state.priority(i), -i))
                _take_with_partners(state, best, partners)

    heap = [(-state.priority(i), i) for i in range(len(items)) if i not in state.taken]
    heapq.heapify(heap)
    while heap:
        _, i = heapq.heappop(heap)
        if not state.eligible(i):
            continue
        fresh = state.priority(i)
        if heap and fresh < -heap[0][0]:
            heapq.heappush(heap, (-fresh, i))
            continue
        _take_with_partners(state, i, partners)

    selection = Selection(chosen=[items[i] for i in state.chosen])
    selection.uncovered_facets = sorted(set(required_facets) - state.covered)
    for i, item in enumerate(items):
        if i in state.taken:
            continue
        if item.tokens > policy.budget:
            reason = R.OVERSIZED
        elif state.capped(i):
            reason = R.PER_DOCUMENT_CAP
        else:
            reason = R.OVER_BUDGET
        selection.left_out[item.record.evidence_id] = reason
    return selection
