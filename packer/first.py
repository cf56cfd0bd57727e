"""Admissions before the relevance fill: each detected disagreement as a complete pair,
then (opt-in) a whole passage for each top answer the candidates assert.

A conflict group found before selection is the most valuable evidence a request
has: the model can only state a disagreement it sees both sides of. So before
facets and the greedy fill, each group (best-ranked first) admits its cheapest
complete pair of sides, both or neither, with the note on them paid at once:
the pair with the most whole sides that fits (the better-ranked side whole,
when one of the two must be a part), then the fewest tokens, then the
best-ranked. A side that does not fit whole goes in as the sentence that
states its side (`Packet.side_unit_of`: only a sentence that carries the
changed fact, `changes.states_change`). Rejected: the first member admitted on
its own utility per token and its partner afterwards (`Packet.take_with_partners`,
still the rule in the greedy fill), which lost the pair to short off-topic
passages, or split it when no room was left for the partner and its note.

Answers covered (`enable_answers_first`, off by default): when the packet the
greedy fill chose carries none of the passages asserting one of the two answers
most candidates assert (`answers.distinct_answers`, three carriers at least),
the cheapest whole carrier of each such answer is admitted behind the pairs and
selection runs again. It is off because no visible set gains: on the full
sets at 150/256/512 every cell stays within 0.5 points of the default, none
rises (the sets' answers are carried by one or two passages; it is meant for
news QA with tens of candidates, where the answer passage ranks low). Rejected:
admitting the carriers before the fill in every request (HotpotQA -3.0/-8.4 at
150/256, MultiHop-RAG -5.8 at 150), answers of one or two carriers (HotpotQA
-1.4 at 256), the best-ranked carrier instead of the cheapest (HotpotQA -1.2
at 256), and yes/no positions alone admitted first (MultiHop-RAG -5.6 at 150).
Why it raises nothing (HotpotQA at 256, `multihop_rag-50` at 200, 500 questions
each): the question's answer kind is read for 219 and 291 ("which company", a
"what" with no type word ask nothing it reads); the most voted answer is the
gold one in 7 of 217 HotpotQA requests with votes (a nationality, "Polish",
outvotes it) and 111 of 288 MultiHop-RAG ones (mostly a yes/no position, each
passage read by the parity of its negations: "did not lower the risk: glucose
did not change" affirms); it fires in 7 and 18 requests and turns no miss into
a hit. Rejected after (full sets at 150/256/512): an answer covered only by a
whole carrier (hotpotqa-notitle -0.6 at 512), and yes/no positions of one
carrier each as well (HotpotQA -1.0 at 256, MultiHop-RAG -2.1 at 150).

Only a group with a member among the best three candidates goes first: a
disagreement the retriever ranks low is more often a series of like pages (the
2011-12 and 2012-13 seasons of one team flagged as one report with changed
figures, 51 of 500 HotpotQA requests) than the question's disagreement.
Measured on the full visible sets at 150/256/512/1024 against the greedy alone:
RAMDocs every gold answer 20.4/45.4/75.0/85.6 -> 23.6/45.6/74.4/85.6, HotpotQA
and hotpotqa-notitle within 0.6 points (-0.6 at 256 without titles), MultiHop-RAG
and ConflictNQ unchanged (no group is found there). Rejected: every group first
(hotpotqa-notitle -1.4/-4.2/-1.4 at 150/256/512, RAMDocs -1.8 at 512), groups of
two only (notitle -1.2/-2.8), groups whose changed sentences hold two question
terms (notitle -1.4/-3.2), a member among the best one, four or five (RAMDocs
+1.8 at 150; notitle -2.2 and -2.6 at 256).
"""

from collections.abc import Sequence
from itertools import combinations

from packer.answers import Answer, distinct_answers
from packer.packet import Packet, Unit

PAIR_RANKS = 3
"""A group is admitted first only when one of its members is among the request's best
`PAIR_RANKS` candidates (after dedup)."""

Side = tuple[int, Unit | None]
"""A member of a group and how it is sent: whole (None) or as a unit."""


def pairs_first(state: Packet, groups: Sequence[Sequence[int]]) -> None:
    """Admit each group's cheapest complete pair that fits (`groups` by record index)."""
    for group in sorted((g for g in groups if len(g) > 1), key=min):
        if any(i in state.taken for i in group) or min(group) >= PAIR_RANKS:
            continue  # taken, or a disagreement among passages the retriever put low
        extra = state.policy.conflict_lacking if len(group) > 2 else 0
        pair = _cheapest_pair(state, group, extra)
        if pair is None:
            continue
        lifted, state.cap_lifted = state.cap_lifted, True  # a side is never capped out
        for index, unit in pair:
            state.take(index, unit)
        state.cap_lifted = lifted
        state.remaining -= extra


def _sides(state: Packet, index: int, partner: int) -> list[Side]:
    """How member `index` may be sent beside `partner`: whole, and as its side unit."""
    out: list[Side] = []
    if state.costs.lower[index] <= state.remaining:
        state.resolve(index)
        out.append((index, None))
    unit = state.side_unit_of(index, partner) if state.policy.conflict_sides else None
    if unit is not None:
        out.append((index, unit))
    return out


def _cheapest_pair(state: Packet, group: Sequence[int], extra: int) -> tuple[Side, Side] | None:
    """The pair of sides with the most whole members that fits with its note, the
    better-ranked member whole rather than its partner, then the cheapest, then the
    best-ranked."""
    room = state.remaining - state.policy.conflict_note - extra
    best: tuple[tuple[int, ...], tuple[Side, Side]] | None = None
    for a, b in combinations(sorted(group), 2):
        for side_a in _sides(state, a, b):
            for side_b in _sides(state, b, a):
                tokens = _tokens(state, side_a) + _tokens(state, side_b)
                if tokens > room:
                    continue
                units = (side_a[1] is not None) + (side_b[1] is not None)
                key = (units, int(side_a[1] is not None), tokens, a, b)
                if best is None or key < best[0]:
                    best = (key, (side_a, side_b))
    return None if best is None else best[1]


def _tokens(state: Packet, side: Side) -> int:
    index, unit = side
    return state.tokens[index] if unit is None else unit.tokens


ANSWERS_COVERED = 2
"""How many of the most carried answers must have a whole passage packed."""
LEAST_CARRIERS = 3
"""Candidates that must assert an answer for it to count: one or two passages stating a
value is no vote."""


def uncovered_answers(state: Packet) -> list[Answer]:
    """The top answers (`answers.distinct_answers`, at least `LEAST_CARRIERS` carriers
    each) that no packed passage carries."""
    kind = state.policy.answer_kind
    if kind is None:
        return []
    found = distinct_answers(state.records, kind, state.policy.question_terms, state.memos)
    return [
        a
        for a in found[:ANSWERS_COVERED]
        if len(a.carriers) >= LEAST_CARRIERS and not state.taken.intersection(a.carriers)
    ]


def answers_first(state: Packet, answers: Sequence[Answer]) -> None:
    """For each of `answers` that no packed passage carries yet, admit its cheapest carrier
    that fits whole."""
    for answer in answers:
        if state.taken.intersection(answer.carriers):
            continue
        fitting = [i for i in answer.carriers if state.may_fit(i)]
        if fitting:
            state.take_with_partners(min(fitting, key=lambda i: (state.tokens[i], i)))
