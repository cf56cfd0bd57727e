"""Admissions before the relevance fill: each detected disagreement as a complete pair,
the two sides of a yes/no question, the name a "who" question asks in full, then
(opt-in) a whole passage for each top answer the candidates assert.

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

Both sides of a yes/no question (`enable_sides_first`, on): for a polar
question (`answer_evidence.answer_kind`), the shortest pair of passages of
two documents, one affirming the question's statement and one denying it, the
first among the best `PAIR_RANKS` (`answers.positions`, `answers.opposite_sides`:
a sentence holding two thirds of the question's terms, read by its main clause),
goes in whole, both or neither, behind the conflict pairs: the model can only
weigh a yes against a no it sees. It is an answer covered, not a disagreement
claimed: no conflict note, no conflict group, nothing counted by conflict
precision (as the conflict rule `position` it paired ConflictNQ fakes saying one
thing in other words: precision 1.0 -> 0.43). Skipped when the packet already
holds a passage of each side (a conflict pair that is the question's two sides).
Measured against it off (300 questions a set, 150/200/256/300/512): HotpotQA,
hotpotqa-notitle, RAMDocs, MultiHop-RAG and `multihop_rag-50` unchanged in every
cell (their yes/no questions, 22 and 121 a budget in HotpotQA and MultiHop-RAG,
name two subjects or two reports: no sentence holds two thirds of their terms,
so no pair is found), ConflictNQ both sides kept +0.3/+0.3/0/0/-0.6 (all 451
questions: +0.2/+0.2/0/0/-0.4; a pair found for 5 of its 20 yes/no questions);
conflict precision unchanged. Rejected: leaving the sides to utility per token
(a whole passage of each side in 92/96, 472/480 and 2,713/2,880 rank orders and
budgets of the three fixtures of `tests/test_packer_selection_rules.py` at
150-300, against all with the sides first: a side went in only as a fragment).

When no pair of sides is read, in a request of at most `FEW_CANDIDATES`, the
shortest passages go in whole first, as many as fit (`shortest_whole`, part of
`enable_sides_first`): debated questions are argued in other words ("Is nuclear
power safe?" against "about 0.03 deaths per terawatt-hour" and "no country has
yet opened a permanent repository"), no sentence holds two thirds of the
question's terms, and the fill took the longest best-ranked passage whole and
another of its side, the other side left out or cut. Among a few candidates
every one is the retriever's answer to the question, so the most whole passages
cover the most positions. On the 14 debated questions of
`tests/data/yes_no_sides.json` (120 rank orders each; none of its 72 passages
is read a side), a whole passage of each side at 150/200/250/300: ours
0.42/0.67/0.86/0.97 -> 0.82/0.94/0.99/1.00, naive loop 0.24/0.45/0.66/0.86,
oracle 1.0 (gap closed 0.23/0.40/0.59/0.81 -> 0.77/0.89/0.95/1.00; its
six-passage questions are left to the fill). Visible sets (300 questions,
150/256/512): unchanged but HotpotQA -0.3 at 256 (one request of five
candidates); conflict precision unchanged. Rejected: no bound on the request's
size, the shortest of the best four (MultiHop-RAG -13.5 at 150 and HotpotQA
-1.3/-2.7/-1.0: their yes/no questions name two reports or two subjects among
ten candidates, the shortest are look-alikes; fixture 0.48/0.62/0.70/0.83 gap
closed); requests of six (fixture 0.81/0.87/1.00/1.00, but ConflictNQ -1.6 at
256: its yes/no requests are a real passage and five fakes, the long real one
left out); the two shortest only (fixture 0.47/0.65/0.88/0.98).

The answer's name in full (`enable_full_names`, on): for a question asking who,
when the packed passages name someone only in short form ("Bankman-Fried") and
candidates give the name in full ("Sam Bankman-Fried"), the cheapest of those
goes in whole and selection runs again (`full_names.shortened_name`, where it is
measured).

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
passage then read by the parity of its negations, since replaced by its main
clause's polarity, `statements`); it fires in 7 and 18 requests and turns no
miss into a hit. Rejected after (full sets at 150/256/512): an answer covered
only by a whole carrier (hotpotqa-notitle -0.6 at 512), and yes/no positions of
one carrier each as well (HotpotQA -1.0 at 256, MultiHop-RAG -2.1 at 150); both
yes/no rejections read a side by the vote's looser test (two question terms),
not the sides' two thirds.

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

A group of two where one passage is the other with one run of at most
`EDIT_WORDS` words changed (`edited_copy`: a number, a date, a name swapped, a
`not` inserted) goes first at any rank: a report and a copy edited to mislead,
not like pages (those differ in many places). On `multihop_rag-conflict` (real
news facts beside a one-fact counterfactual copy) 62 of 375 pairs were lost at
150, 61 of them detected (`copy`): 49 with neither side among the best three,
left out for short off-topic facts of the fill, 8 with one side in. With the
rule, 300 questions a set at 150/256/512: that set both sides kept
85.7/90.0/95.7 -> 98.7/99.6/99.6 (gap closed 0.85/0.88/0.94 -> 0.99/1.0/0.99),
HotpotQA -0.3 and hotpotqa-notitle -0.4 at 150 (one question each), every other
visible cell unchanged, conflict precision unchanged (RAMDocs 0.865).
Measured beside it: one changed word only (98.7/99.6/99.6 -> 97.4/98.7/99.1, a
swapped two-word name missed), six words (every cell as three: three kept as the
tighter reading of "one fact"). The HotpotQA cost is two template pages of 300
requests (two railway-station stubs, two award stubs: one name changed), both
distractors; not changes in a passage's opening eight words (the subject a
template names) only: 168 of the 375 news edits sit there.
"""

from collections.abc import Sequence
from itertools import combinations

from packer.answers import Answer, distinct_answers, opposite_sides, positions
from packer.full_names import shortened_name
from packer.packet import Packet, Unit

PAIR_RANKS = 3
"""A group is admitted first only when one of its members is among the request's best
`PAIR_RANKS` candidates (after dedup)."""

Side = tuple[int, Unit | None]
"""A member of a group and how it is sent: whole (None) or as a unit."""


EDIT_WORDS = 3
"""An edited copy changes one run of at most this many words (`edited_copy`)."""


def edited_copy(a: str, b: str) -> bool:
    """Whether one text is the other with one run of at most `EDIT_WORDS` words changed,
    inserted or removed: a report and an edited copy of it, the misinformation shape."""
    left, right = a.split(), b.split()
    if abs(len(left) - len(right)) > EDIT_WORDS or left == right:
        return False
    start = 0
    while start < min(len(left), len(right)) and left[start] == right[start]:
        start += 1
    end = 0
    while end < min(len(left), len(right)) - start and left[-1 - end] == right[-1 - end]:
        end += 1
    return max(len(left), len(right)) - start - end <= EDIT_WORDS


def _goes_first(state: Packet, group: Sequence[int]) -> bool:
    """A group among the best `PAIR_RANKS`, or two passages one of which is an edited
    copy of the other at any rank (`edited_copy`): like pages a retriever ranks low
    differ in many places, a copy edited to mislead in one."""
    if min(group) < PAIR_RANKS:
        return True
    return len(group) == 2 and edited_copy(*(state.records[i].text for i in group))


def pairs_first(state: Packet, groups: Sequence[Sequence[int]]) -> None:
    """Admit each group's cheapest complete pair that fits (`groups` by record index)."""
    for group in sorted((g for g in groups if len(g) > 1), key=min):
        if any(i in state.taken for i in group) or not _goes_first(state, group):
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


def sides_first(state: Packet) -> None:
    """For a yes/no question, admit the shortest pair of opposite sides whole (both, or
    neither), unless the packet holds a passage of each side already; when no such pair
    is read, the shortest passages of a small request (`shortest_whole`). Not a
    conflict: no note is paid and no group made. A pair that is also a conflict group is
    left to the conflict rules (its note)."""
    if state.policy.answer_kind != "polar":
        return
    sides = positions(state.records, state.policy.question_terms, state.memos)
    if len({sides[i] for i in state.taken if i in sides}) == 2:
        return
    pair = opposite_sides(state.records, sides, PAIR_RANKS)
    if pair is None:
        shortest_whole(state)
        return
    if pair[1] in state.partners.get(pair[0], ()):
        return
    lifted, state.cap_lifted = state.cap_lifted, True  # a side is never capped out
    wanted = [i for i in pair if i not in state.taken]
    if all(state.may_fit(i) for i in wanted) and _whole_cost(state, wanted) <= state.remaining:
        for index in wanted:
            state.take(index)
    state.cap_lifted = lifted


FEW_CANDIDATES = 5
"""The most candidates a request may hold for its shortest passages to go in whole first
when no side of its yes/no question is read."""


def shortest_whole(state: Packet) -> None:
    """No side of the yes/no question read, in a request of at most `FEW_CANDIDATES`: the
    shortest passages go in whole first, as many as fit, so that the most positions are
    covered (see the module's docstring)."""
    if len(state.records) > FEW_CANDIDATES:
        return
    for index in sorted(range(len(state.records)), key=lambda i: (state.resolve(i), i)):
        if state.may_fit(index):
            state.take_with_partners(index)


def _whole_cost(state: Packet, indices: Sequence[int]) -> int:
    """Tokens of taking `indices` whole, each with the note on it alone (not partners)."""
    return sum(state.resolve(i) + state.note_cost(i) for i in indices)


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


_PERSON_ASKED = frozenset(("who", "whom", "whose"))
"""Question words asking a person, whose name a passage may give in short form ("where"
asks a place, named in full)."""


def name_in_full(state: Packet) -> list[Answer]:
    """For a question asking who, the full form of the name the packet shows only in
    short form, as an answer to cover (`full_names.shortened_name`)."""
    asked = f" {state.policy.question} "
    if state.policy.answer_kind != "name" or not any(f" {w} " in asked for w in _PERSON_ASKED):
        return []
    shown = [state.shown_text(i) for i in state.chosen]
    found = shortened_name(state.records, shown, state.policy.question_terms, state.memos)
    return [found] if found is not None else []


def answers_first(state: Packet, answers: Sequence[Answer]) -> None:
    """For each of `answers` that no packed passage carries yet, admit its cheapest carrier
    that fits whole."""
    for answer in answers:
        if state.taken.intersection(answer.carriers):
            continue
        fitting = [i for i in answer.carriers if state.may_fit(i)]
        if fitting:
            state.take_with_partners(min(fitting, key=lambda i: (state.tokens[i], i)))
