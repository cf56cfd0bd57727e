"""The growing packet of one selection run, and each item's utility against it
(`packer.select` decides the order items are tried in)."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from packer.answer_evidence import AnswerKind, answers
from packer.changes import states_change
from packer.layout import BlockCosts
from packer.records import Evidence, fold_case, term_search, terms_in
from packer.relevance import calibrated, min_max
from packer.runtime import Memos
from packer.sources import named_sources
from packer.statements import side_unit
from packer.subjects import short_forms, subject_of
from packer.units import best_unit, context_start
from schemas import ExclusionReason, UtilityWeights


@dataclass(frozen=True, slots=True)
class SelectionPolicy:
    """The knobs of one selection run, taken from the packing config."""

    budget: int
    """Tokens the blocks may take (the evidence budget less the label line and the
    notes known before selection)."""
    evidence_budget: int
    """The whole evidence budget: a block larger than this alone is `oversized`."""
    weights: UtilityWeights
    per_document_cap: int | None
    facet_coverage: bool
    as_of: datetime
    question_terms: frozenset[str] = frozenset()
    question_stems: frozenset[str] = frozenset()
    """What passages are searched for (`question.stem`); `question_terms` are compared with
    whole words (answers, sides)."""
    question: str = ""
    conflict_note: int = 0
    """Tokens of a two-member conflict note; `conflict_member` each further member."""
    conflict_member: int = 0
    conflict_alone: int = 0
    """Tokens of the note on a conflict member packed without its partners (they did not
    fit: the first member taken pays for it); `conflict_lacking` what saying so adds to a
    note on more members."""
    conflict_lacking: int = 0
    answer_kind: AnswerKind | None = None
    """What answers the question (`answer_evidence.answer_kind`)."""
    claim_units: bool = False
    """A passage's smaller unit is chosen by answer evidence too (`unit_of`)."""
    conflict_sides: bool = False
    """A conflict partner that does not fit whole goes in as the sentence stating its side
    (`statements.side_unit`)."""
    sentence_units: bool = False
    subject_links: bool = False
    """Untitled passages link by the name they open with (`subject_of`)."""
    named_sources: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Publishers the question names (`publisher_segments`), each with the question
    terms said of it."""
    named_days: frozenset[tuple[int | None, int, int]] = frozenset()
    """Days the question names (`named_days`)."""
    calibrated_relevance: bool = True
    """Relevance by rank and share of the top score (`relevance.calibrated`), not min-max."""
    first: frozenset[str] = frozenset()
    """Admissions before the relevance fill (`packer.first`): `pairs`, `sides`, `answers`,
    `names` (the answer's name in full)."""


@dataclass(frozen=True, slots=True)
class Unit:
    """A run of complete sentences of a passage: its offsets, exact tokens, question terms."""

    span: tuple[int, int]
    tokens: int
    terms: frozenset[str]


class Packet:
    """The growing packet, and each item's utility against it.

    Per-item facts (facets, terms, title, static utility) are computed once up
    front, as lists by index: the greedy loop re-scores items many times.
    """

    def __init__(
        self,
        records: Sequence[Evidence],
        costs: BlockCosts,
        policy: SelectionPolicy,
        partners: dict[int, list[int]],
        memos: Memos,
    ) -> None:
        self.records = records
        self.memos = memos
        self.costs, self.policy = costs, policy
        self.remaining = policy.budget
        self.covered: set[str] = set()
        self.covered_terms: set[str] = set()
        self.docs: dict[str, int] = {}
        self.words: set[str] = set()
        self.chosen: list[int] = []
        self.taken: set[int] = set()
        self.units: dict[int, tuple[int, int]] = {}
        self.cap_lifted = False
        self.held_back: set[int] = set()
        """Items the per-document cap made wait: if left out, the cap is why."""
        self.partners = partners
        self.tokens: list[int] = list(costs.estimate)
        self.exact: list[bool] = [False] * len(records)
        self._doc_ids = [r.document_id for r in records]
        self._facets = [r.facets for r in records]
        terms = policy.question_stems
        stems = term_search(terms)
        self._terms = [stems.found_in(r.canonical) for r in records]
        self._opening = [r.facts.opening for r in records]
        titles = [
            memos.title_key(
                r.candidate.title or (subject_of(r.text) if policy.subject_links else "")
            )
            for r in records
        ]
        self.linked = {i for i, t in enumerate(titles) if t and t in policy.question}
        named = named_sources(
            records, self._terms, policy.named_sources, policy.named_days, policy.question
        )
        self.sourced = named.publisher
        """Items whose publisher the question names, by index: the publisher."""
        self.packed_sources: set[str] = set()
        self._source_terms, self._shared_names = named.term_share, named.shared
        self._unlinked = {  # an opening's full name is mentioned by its short forms too
            i: (t,) if records[i].candidate.title else short_forms(t)
            for i, t in enumerate(titles)
            if t and i not in self.linked
        }
        self._forms = term_search(frozenset(f for v in self._unlinked.values() for f in v))
        self.newly_linked: list[int] = []
        w = policy.weights
        self._static = self._static_utilities()
        self._w_facet, self._w_source, self._w_linked = w.new_facet, w.new_source, w.linked
        self._w_named, self._w_named_terms = w.named_source, w.named_source_terms
        self._w_shared, self._w_redundancy = w.shared_name, w.redundancy
        self._w_terms = w.new_question_terms / len(terms) if terms else 0.0
        self._cost_per_token = w.token_cost / max(1, policy.budget)
        self._overhead = w.block_overhead

    def _static_utilities(self) -> list[float]:
        """Relevance, authority and recency: the terms that do not depend on the packet."""
        w = self.policy.weights
        scores = [r.score for r in self.records]
        relevances = calibrated(scores) if self.policy.calibrated_relevance else min_max(scores)
        out = []
        recency_of: dict[datetime, float] = {}  # records mostly share a few dates
        for record, relevance in zip(self.records, relevances, strict=True):
            recency = 0.0
            if record.effective_at is not None:
                recency = recency_of.get(record.effective_at, -1.0)
                if recency < 0:
                    age = (self.policy.as_of - record.effective_at).total_seconds()
                    recency = 1.0 / (1.0 + max(0.0, age / 86400) / 365.0)
                    recency_of[record.effective_at] = recency
            out.append(
                w.relevance * relevance
                + w.authority * (record.candidate.authority or 0.0)
                + w.recency * recency
            )
        return out

    def priority(self, index: int, unit: Unit | None = None) -> float:
        """Utility per token (and `block_overhead`) of item `index` (or of its `unit`).

        A unit is valued as the whole passage but for the question terms it
        holds and its own tokens.
        """
        if unit is None:
            tokens, terms = self.tokens[index], self._terms[index]
        else:
            tokens, terms = unit.tokens, unit.terms
        utility = self._static[index] - self._cost_per_token * tokens
        facets = self._facets[index]
        if facets:
            new = sum(1 for f in facets if f not in self.covered)
            utility += self._w_facet * new / len(facets)
        if self._doc_ids[index] not in self.docs:
            utility += self._w_source
        if terms:
            utility += self._w_terms * len(terms - self.covered_terms)
        if index in self.linked:
            utility += self._w_linked
        publisher = self.sourced.get(index)
        if publisher is not None:
            named = self._w_named / 2 if publisher in self.packed_sources else self._w_named
            utility += named + self._w_named_terms * self._source_terms[index]
        if index in self._shared_names:
            utility += self._w_shared
        if self.words:
            words = self._opening[index]
            if words:
                shared = len(self.words.intersection(words))
                utility -= self._w_redundancy * shared / len(words)
        return max(utility, 1e-9) / max(1.0, tokens + self._overhead)

    def resolve(self, index: int) -> int:
        """The exact token count of item `index`, computed once."""
        if not self.exact[index]:
            self.tokens[index] = self.costs.exact(index)
            self.exact[index] = True
        return self.tokens[index]

    def capped(self, index: int) -> bool:
        """Whether the item's document has its share of blocks while others still wait."""
        cap = self.policy.per_document_cap
        return (
            cap is not None
            and not self.cap_lifted
            and self.docs.get(self._doc_ids[index], 0) >= cap
        )

    def note_cost(self, index: int) -> int:
        """Tokens the conflict notes grow by if item `index` is taken. The first member
        of a group pays for the note on one member whose partners were left out (it is
        rendered unless a partner follows); a second turns it into the note on two, and
        each further one adds its label."""
        partners = self.partners.get(index)
        if not partners:
            return 0
        taken = sum(1 for other in partners if other in self.taken)
        if not taken:
            return self.policy.conflict_alone
        if taken == 1:
            return self.policy.conflict_note - self.policy.conflict_alone
        return self.policy.conflict_member

    def may_fit(self, index: int) -> bool:
        """False once the item cannot fit; resolves its exact count when it might."""
        if index in self.taken or self.capped(index) or self.costs.lower[index] > self.remaining:
            return False
        return self.resolve(index) + self.note_cost(index) <= self.remaining

    def take(self, index: int, unit: Unit | None = None) -> None:
        """Add item `index` to the packet, whole or as a `unit`."""
        self.remaining -= self.note_cost(index)
        if unit is None:
            self.remaining -= self.tokens[index]
            terms = self._terms[index]
        else:
            self.units[index] = unit.span
            self.tokens[index] = unit.tokens
            self.exact[index] = True
            self.remaining -= unit.tokens
            terms = unit.terms
        self.covered.update(self._facets[index])
        if index in self.sourced:
            self.packed_sources.add(self.sourced[index])
        self.covered_terms |= terms
        doc = self._doc_ids[index]
        self.docs[doc] = self.docs.get(doc, 0) + 1
        self.words.update(self._opening[index])
        self.chosen.append(index)
        self.taken.add(index)
        self._unlinked.pop(index, None)
        # every name of an unlinked item sought at once (one pass in C), and the items read
        # one by one only when one is there: most takes find none
        mentioned = self._forms.found_in(self.records[index].canonical)
        if not mentioned:
            return
        for other, forms in list(self._unlinked.items()):
            if not mentioned.isdisjoint(forms):
                del self._unlinked[other]
                self.linked.add(other)
                self.newly_linked.append(other)

    def take_with_partners(self, index: int, unit: Unit | None = None) -> None:
        """Take an item (whole or as a `unit`), then its conflict partners before anything
        else: whole if they fit, else (`conflict_sides`) as the sentence that states their
        side. A partner that still does not fit is left out, and the note saying so is
        paid for (`note_cost`, `conflict_lacking`): never one side silently. The cap
        on a document's blocks does not hold a partner back."""
        self.take(index, unit)
        partners = [p for p in self.partners.get(index, ()) if p not in self.taken]
        if not partners or (unit is not None and not self.policy.conflict_sides):
            return
        lifted, self.cap_lifted = self.cap_lifted, True
        for other in partners:
            if self.may_fit(other):
                self.take(other)
            elif self.policy.conflict_sides:
                side = self.side_unit_of(other, index)
                if side is not None:
                    self.take(other, side)
        self.cap_lifted = lifted
        group = [index, *self.partners[index]]
        taken = sum(p in self.taken for p in group)
        if 1 < taken < len(group):
            self.remaining -= self.policy.conflict_lacking

    def side_unit_of(self, index: int, partner: int) -> Unit | None:
        """Item `index` as the sentence stating its side against `partner` (the statement
        nearest one of the partner's, `statements.side_unit`) with the sentence before it
        when it opens with a pronoun and both fit; None when none fits or the sentence
        does not state the change (`changes.states_change`)."""
        text = self.records[index].text
        statements = self.memos.statements(text).all
        theirs = self.memos.statements(self.records[partner].text).all
        side = side_unit(statements, theirs, self.policy.question_terms)
        other = self.records[partner].text
        if side is None or not states_change(text[side.start : side.end], other, (side,), theirs):
            return None
        spans = [(side.start, side.end)]
        context = context_start(text, side.start, self.memos.sentences(text))
        if context is not None:
            spans.insert(0, (context, side.end))
        for start, end in spans:
            if (start, end) == (0, len(text)):
                continue  # the whole passage, which did not fit
            tokens = self.costs.exact(index, text[start:end])
            if tokens + self.note_cost(index) <= self.remaining:
                terms = terms_in(self._terms[index], fold_case(text[start:end]))
                return Unit((start, end), tokens, terms)
        return None

    def unit_of(self, index: int) -> Unit | None:
        """The best run of complete sentences of item `index` that fits now.

        A run is worth the question terms it holds, twice those the packet
        lacks, and something more from a new document; a run that holds none
        of the question's terms is worth nothing (the per-document cap still
        applies). With `claim_units`, a sentence that answers the question
        (`answer_evidence.answers`) is worth two terms more, and a run that
        opens with a pronoun takes the sentence before it when that fits.
        A passage that holds no question term has no run worth anything (a sentence
        answers only with a term held): its sentences are not read at all, which
        on the speed bench's paragraphs spares 87% of the searches.
        """
        terms = self._terms[index]
        if not terms or index in self.taken or self.capped(index):
            return None  # no term in the passage: every run is worth nothing (nor answers)
        text = self.records[index].text
        sentences = self.memos.sentences(text)
        held = [terms_in(terms, s.folded) for s in sentences]
        kind = self.policy.answer_kind
        if kind is not None and self.policy.claim_units:
            terms_asked = self.policy.question_terms
            held = [
                h | _ANSWERS
                if answers(text[s.start : s.end], s.folded, kind, h, terms_asked)
                else h
                for h, s in zip(held, sentences, strict=True)
            ]
        missing = (terms - self.covered_terms) | _ANSWERS
        fresh = 0.5 if self._doc_ids[index] not in self.docs else 0.0
        room = self.remaining - self.costs.label_cost - self.note_cost(index)

        def value(run: frozenset[str]) -> float:
            return len(run) + len(run & missing) + fresh if run else 0.0

        def span(i: int, j: int) -> tuple[int, int]:
            return sentences[i].start, sentences[j].end

        def fits(i: int, j: int) -> bool:
            start, end = span(i, j)
            tokens = self.costs.exact(index, text[start:end])
            return tokens + self.note_cost(index) <= self.remaining

        found = best_unit(sentences, held, value, fits, room)
        if found is None:
            return None
        first, last = found
        if self.policy.claim_units and first > 0:
            leaned = context_start(text, sentences[first].start, sentences)
            if leaned is not None and fits(first - 1, last):
                first -= 1  # the sentence a pronoun leans on
        start, end = span(first, last)
        tokens = self.costs.exact(index, text[start:end])  # cached by the fit test
        held_terms = frozenset().union(*held[first : last + 1]) - _ANSWERS
        return Unit((start, end), tokens, held_terms)

    def shown_text(self, index: int) -> str:
        """What the packet shows of item `index`: its unit, or its whole text."""
        text = self.records[index].text
        span = self.units.get(index)
        return text if span is None else text[span[0] : span[1]]

    def reason_left_out(self, index: int) -> ExclusionReason:
        budget = self.policy.evidence_budget
        if self.exact[index]:
            oversized = self.tokens[index] > budget
        elif self.costs.lower[index] > budget:
            oversized = True
        else:  # only a candidate near the budget's size needs its exact count
            oversized = self.costs.upper(index) > budget and self.resolve(index) > budget
        if oversized:
            return ExclusionReason.OVERSIZED
        if index in self.held_back or self.capped(index):
            return ExclusionReason.PER_DOCUMENT_CAP
        return ExclusionReason.OVER_BUDGET


_ANSWERS = frozenset(("\x00answers",))
"""Held by a sentence that answers the question: no text's term can be this word."""
