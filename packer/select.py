"""Selection under the evidence budget: facet coverage first, then utility per token,
then complete smaller units in the room left.

Greedy on utility per token runs lazily over a max-heap of stale priorities.
The dynamic terms (new facet, new question terms, new source, redundancy) only lose value as the
packet grows, so a popped item whose fresh priority still beats the next stale
one is taken. The one term that can grow, a link (the item's title named by
the question or by packed evidence), pushes a fresh entry when it appears.
Until an item comes near the top, its token cost is an estimate
from its length; its exact count is computed when it is popped, and only exact
counts admit a block. Items whose lower bound no longer fits are dropped
without counting. Ties break on rank order.

Taking the second member of a conflict group also pays for the note that
tells the model about it, so the budget holds what will be rendered. When
nothing else fits whole, the passages left out may still contribute their best
run of complete sentences (`packer.units`), most valuable first.

A passage without a title links by the name it opens with, the way an
encyclopedia entry names its subject (`subject_of`): on HotpotQA without titles
this recovers most of what titles give (both supporting paragraphs at 256
tokens: 34.0% -> 48.8%, the oracle 76.6%). Measured and rejected (full sets,
points against the defaults at 150/256/512/1024): question-term coverage
weighted by IDF over the request's own candidates (hotpotqa-notitle -1.0 at
150, MultiHop-RAG -0.5 at 256; at three times the weight HotpotQA -0.6 at 256,
+1.6 at most anywhere); question terms sought in the title as well as the
text (MultiHop-RAG -1.2 at 256); subject links only from packed evidence, not
from the question (hotpotqa-notitle 6 points below links from both); a
subject shared by other candidates left unlinked (within 1 point either way
on every set; simpler without); a sentence unit valued at its share of the
passage's static, source and facet utility, so that it displaces fewer whole
passages (hotpotqa-notitle +1.8 at 256, but ConflictNQ -6.8 at 256, where the
long real passage reaches the packet only as a unit); sentence units sought
only once no passage fits whole (hotpotqa-notitle +2.8 at 256, reaching half
the oracle gap, but ConflictNQ -13.8 at 256 and RAMDocs -3.8 at 150); a
bonus for a passage holding a value of the question's type (a date for
`when`, a number for `how many`, `question.Question.slot`) while the
packet has none (weight 0.5: HotpotQA -0.2 at 256 and 512, ConflictNQ +1.1
at 256, hotpotqa-notitle unchanged at 256; weight 1: RAMDocs -0.4 at 150).
Rejected (300 questions a set at 150/256/512): no unit sought for a linked
passage, so that a hop goes in whole or not at all (HotpotQA +0.4 to +0.6,
hotpotqa-notitle +0.3 at 150 only,
RAMDocs -7.7/-13.7 and ConflictNQ -7.3/-5.3 at 150/256).
Rejected with the block overhead on (full sets): sentence units only for the
three best-ranked passages (ConflictNQ -17.5 at 512, RAMDocs -2.8 at 256) or
the five best (notitle unchanged at 256, ConflictNQ -3.8 at 512); the
best-ranked passage packed in part admitted whole first and selection run
again (HotpotQA -21.6 at 256).

A passage whose publisher the question names ("the report from The Verge on
2023-11-24": the host of its `source_url`, on a day the question names if it
names days; `packer.subjects`) is worth `named_source` (half once that
publisher is packed) plus `named_source_terms` times the share it holds of
the terms the question says of that publisher. A news search's candidates
carry their article's address and date as a user's would; nothing else of the
record is read. MultiHop-RAG all evidence at 150/256: 39.6/53.1 -> 51.7/77.2
(gap to the oracle closed 0.22/0.21 -> 0.44/0.61); no other set's candidates
carry a web address, and none of their cells moves. Measured on MultiHop-RAG
at 150/256 and rejected: publisher or day (either) linking, 44.8/70.9, and
the day alone, 42.4/55.5, against 45.5/71.8 for publisher on the named day
(all at weight 1, without the terms); no credit at all for a second passage
of a packed publisher, 47.3/60.6 (many questions need two facts of one
publisher). Weights, measured before mentions had to be capitalized (the
chosen 2 and 8 then gave 51.5/77.2): the publisher at 1 with the terms at 8,
50.3/72.7; at 3, a third once packed, no terms, 49.4/74.6; the terms at
0/1/2/4, 48.7/74.4, 49.7/76.0, 50.6/76.2, 51.3/76.5; a second passage of a
packed publisher at full or a quarter of the weight, 49.2/77.2 and
52.7/74.4. Rejected after: only the publisher's terms the packet lacks yet,
52.0/75.5.
"""

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

from packer.answers import Answer
from packer.first import (
    answers_first,
    name_in_full,
    pairs_first,
    sides_first,
    uncovered_answers,
)
from packer.layout import BlockCosts
from packer.packet import Packet, SelectionPolicy, Unit
from packer.records import Evidence
from packer.runtime import Memos
from schemas import ExclusionReason

__all__ = ["Selection", "SelectionPolicy", "select"]


@dataclass(slots=True)
class Selection:
    """Chosen indices in the order they were chosen, and why the rest were not."""

    chosen: list[int] = field(default_factory=list)
    left_out: dict[int, ExclusionReason] = field(default_factory=dict)
    units: dict[int, tuple[int, int]] = field(default_factory=dict)
    """For chosen items packed as a smaller unit: its offsets in the item's text."""
    block_tokens: dict[int, int] = field(default_factory=dict)
    """Exact tokens of each chosen block, labels included."""


def _groups(records: Sequence[Evidence], conflicts: Sequence[Sequence[str]]) -> list[list[int]]:
    """The conflict groups by record index (members not among `records` left out)."""
    index_of = {record.evidence_id: i for i, record in enumerate(records)}
    return [[index_of[e] for e in group if e in index_of] for group in conflicts]


def _partners(groups: Sequence[Sequence[int]]) -> dict[int, list[int]]:
    return {m: [o for o in members if o != m] for members in groups for m in members}


def select(
    records: Sequence[Evidence],
    costs: BlockCosts,
    required_facets: Sequence[str],
    conflicts: Sequence[Sequence[str]],
    policy: SelectionPolicy,
    memos: Memos,
) -> Selection:
    """Choose which records fill the budget. `records` must be in rank order."""
    groups = _groups(records, conflicts)

    def run(answers: Sequence[Answer]) -> Packet:
        state = Packet(records, costs, policy, _partners(groups), memos)
        if "pairs" in policy.first:
            pairs_first(state, groups)
        if "sides" in policy.first:
            sides_first(state)
        answers_first(state, answers)
        if policy.facet_coverage:
            for facet in sorted(set(required_facets)):
                if facet in state.covered:
                    continue
                options = [
                    i for i, r in enumerate(records) if facet in r.facets and state.may_fit(i)
                ]
                if options:
                    best = max(options, key=lambda i: (state.priority(i), -i))
                    state.take_with_partners(best)
        state.newly_linked.clear()
        _greedy(state)
        return state

    state = run(())
    missing = uncovered_answers(state) if "answers" in policy.first else []
    if "names" in policy.first:
        missing += name_in_full(state)
    if missing:
        state = run(missing)
    left_out = {i: state.reason_left_out(i) for i in range(len(records)) if i not in state.taken}
    block_tokens = {i: state.tokens[i] for i in state.chosen}
    return Selection(state.chosen, left_out, state.units, block_tokens)


UNIT_TRIES = 16
"""Passages whose best run of sentences is sought, per request: bounds the work on
long candidate lists (each search counts a few runs exactly)."""


def _greedy(state: Packet) -> None:
    """Lazy greedy by utility per token; a passage that no longer fits whole competes
    again as its best run of whole sentences, at that run's own priority.

    The per-document cap spreads the budget, it does not waste it: passages
    held back by it wait until every other candidate was tried, then compete
    for the room left. Rejected: a hard cap, which left budget unused while
    a document's further evidence (three facts of one news article) waited.
    """
    heap = [(-state.priority(i), i) for i in range(len(state.records)) if i not in state.taken]
    heapq.heapify(heap)
    units: dict[int, Unit] = {}
    tries = UNIT_TRIES if state.policy.sentence_units else 0
    waiting: list[int] = []
    while heap or waiting:
        if not heap:
            state.cap_lifted = True
            heap = [(-state.priority(i), i) for i in waiting if i not in state.taken]
            heapq.heapify(heap)
            waiting = []
            continue
        _, i = heapq.heappop(heap)
        if state.capped(i):
            waiting.append(i)
            state.held_back.add(i)
            continue
        unit = units.pop(i, None)
        if unit is not None and unit.tokens + state.note_cost(i) > state.remaining:
            unit = None  # the room shrank since: seek a smaller run
        if unit is None and not state.may_fit(i):
            if tries and i not in state.taken and not state.capped(i):
                tries -= 1
                found = state.unit_of(i)
                if found is not None:
                    units[i] = found
                    heapq.heappush(heap, (-state.priority(i, found), i))
            continue
        fresh = state.priority(i, unit)
        if heap and fresh < -heap[0][0]:
            if unit is not None:
                units[i] = unit
            heapq.heappush(heap, (-fresh, i))
            continue
        state.take_with_partners(i, unit)
        # A link only raises a priority: give the linked items a fresh entry.
        for j in state.newly_linked:
            heapq.heappush(heap, (-state.priority(j, units.get(j)), j))
        state.newly_linked.clear()
