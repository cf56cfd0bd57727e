"""Deterministic checks of one answer against the packet its prompt was built from.

Seed 002's "verify after generation" and seed 000's citation check, as far as
they can be decided without a model (docs/verify.md):

- `answered`: the answer has a word in it (an empty or blank answer fails).
- `labels_exist`: every cited label is in the request's label map.
- `cites_evidence`: an answer whose packet has evidence cites a label at all,
  unless it abstains (`abstains`: mostly sentences saying the evidence lacks
  something, and no figure stated otherwise).
- `no_leaked_ids`: no evidence or document id of the run appears, other than
  this packet's own (ids are checked when they cannot be prose: four
  characters or more, with a digit or one of `_-:/.`).
- `factual_sentences_cited`: a sentence stating a figure, date or quoted
  phrase cites at least one listed label (unless it says the evidence lacks
  something: "the sources do not state the 2026 price"; it must name the
  sources, evidence, records or the like, so "date of death unknown" is no
  such sentence).
- `figures_supported`: each of those figures, dates and phrases appears in a
  cited block's text, after normalization (`packer.verification.figures`).
- `names_supported`: each capitalised name (a person, place, organisation, product) of
  a citing sentence is written in a cited block (scope `packet`: any block) or the given
  text, as `packer.verification.names` reads names; its own check, so a team can gate
  on it or not.
- `conflicts_reported`: every label of each conflict the manifest flagged is
  cited, so both sides are shown.
- `uncovered_facets_declared`: each facet listed as uncovered is said to be
  unavailable, and no sentence naming it answers it. A sentence names a facet
  when the facet's words appear in it in order, each starting a word
  ("return-shipping" is named by "Return shipping costs ...").
- `abstention`: a packet without evidence gets an abstention and no citation.
- `no_excluded_text`: no run of six words of a candidate the gates excluded
  (unauthorized, unknown, deleted, superseded, not yet effective, blocked)
  appears, unless the packed evidence has the same words.

Checks that do not apply to a packet are `skip`, never `pass`. Entailment
("does E2 say what the sentence says?") is not decided here: only figures,
dates and phrases, which a deterministic rule can decide.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass

from packer.verification.claims import AnswerSentence, parse_answer
from packer.verification.figures import Fact, normalize_phrase
from packer.verification.given import GIVEN, GivenPacket
from packer.verification.names import missing_names
from packer.verification.support import unsupported_facts
from packer.verification.unavailable import SOURCES, UNAVAILABLE, abstains
from schemas.reasons import ExclusionReason
from schemas.verification import CheckName, CheckResult, Scope

_ID_TOKEN = re.compile(r"[^\s\[\](){}<>\"'`,;!?“”‘’]+")
SHINGLE_WORDS = 6
_WORD = re.compile(r"\w+")

SCOPES = ("citation", "packet")
"""What a sentence's figures, dates and quotes are checked against: `citation`, the blocks it
cites (the default; the citation checks run); `packet`, every block of the prompt, for answers
to prompts that asked for no citations (the citation checks are `skip`)."""
CITATION_CHECKS: frozenset[CheckName] = frozenset(
    {"labels_exist", "cites_evidence", "factual_sentences_cited", "conflicts_reported"}
)
"""The checks that read an answer's citations: `skip` in the packet scope."""

GATE_REASONS = frozenset(r for r in ExclusionReason if r.withheld)
"""Exclusion reasons that mean "this text may not reach the answer" (not duplicates or budget)."""


def checkable_id(value: str) -> bool:
    """Whether an id can be told from prose: long enough, and not a plain word."""
    return len(value) >= 4 and any(c.isdigit() or c in "_-:/." for c in value)


@dataclass(frozen=True)
class Verdict:
    """The outcome of every check, and the answer's citation figures; a failed check in
    `advisory` is reported (`failed`) but does not fail the answer (`passed`)."""

    checks: list[CheckResult]
    sentences: int
    cited_sentences: int
    labels_cited: list[str]
    advisory: frozenset[str] = frozenset()

    @property
    def passed(self) -> bool:
        return all(c.outcome != "fail" for c in self.checks if c.name not in self.advisory)

    @property
    def failed(self) -> list[str]:
        return [c.name for c in self.checks if c.outcome == "fail"]


def _result(
    name: CheckName, offending: Iterable[str], sentences: Iterable[str], detail: str
) -> CheckResult:
    bad = list(dict.fromkeys(offending))
    bad_sentences = list(dict.fromkeys(sentences))
    outcome = "fail" if bad or bad_sentences else "pass"
    return CheckResult(
        name=name,
        outcome=outcome,
        offending=bad,
        sentences=bad_sentences,
        detail=detail if outcome == "fail" else "",
    )


def _skip(name: CheckName, why: str) -> CheckResult:
    return CheckResult(name=name, outcome="skip", offending=[], sentences=[], detail=why)


def check_answered(answer: str) -> CheckResult:
    empty = not _WORD.search(answer)
    return _result("answered", ["empty answer"] if empty else [], (), "the answer has no text")


def check_cites_evidence(
    sentences: list[AnswerSentence], packet: GivenPacket, answer: str
) -> CheckResult:
    """Any citation counts here (an unknown one fails `labels_exist`)."""
    if not packet.blocks:
        return _skip("cites_evidence", "the packet has no evidence")
    if not _WORD.search(answer):
        return _skip("cites_evidence", "empty answer")
    uncited = not any(s.labels for s in sentences) and not abstains(sentences)
    return _result(
        "cites_evidence",
        ["no citation"] if uncited else [],
        (),
        "the packet has evidence, and the answer cites none of it nor abstains",
    )


def check_labels(sentences: list[AnswerSentence], packet: GivenPacket) -> CheckResult:
    unknown = [
        (s.text, label) for s in sentences for label in s.labels if label not in packet.blocks
    ]
    return _result(
        "labels_exist",
        (label for _, label in unknown),
        (text for text, _ in unknown),
        f"cited labels not in the label map ({', '.join(sorted(packet.blocks)) or 'none'})",
    )


def check_leaked_ids(
    sentences: list[AnswerSentence], packet: GivenPacket, run_ids: frozenset[str]
) -> CheckResult:
    if not run_ids:
        return _skip("no_leaked_ids", "no ids of the run given")
    leaks: list[tuple[str, str]] = []
    for s in sentences:
        tokens = _ID_TOKEN.findall(s.text)
        if run_ids.isdisjoint(tokens) and run_ids.isdisjoint(t.rstrip(".:") for t in tokens):
            continue  # the common case, decided by set operations
        for token in tokens:
            for candidate in (token, token.rstrip(".:")):
                if candidate in run_ids and candidate not in packet.own_ids:
                    leaks.append((s.text, candidate))
                    break
    return _result(
        "no_leaked_ids",
        (i for _, i in leaks),
        (t for t, _ in leaks),
        "ids of evidence or documents outside this packet",
    )


def _valid_labels(sentence: AnswerSentence, packet: GivenPacket) -> list[str]:
    return [label for label in sentence.labels if label in packet.blocks]


def _given(fact: Fact, packet: GivenPacket) -> bool:
    """Whether the prompt outside the evidence states the fact (the question restated)."""
    return bool(packet.given) and packet.given_facts().supports(fact)


def check_cited(sentences: list[AnswerSentence], packet: GivenPacket) -> CheckResult:
    """Sentences saying the evidence lacks something need no citation, nor figures that the
    prompt gave outside the evidence (the question's)."""
    uncited = [
        (s, stated)
        for s in sentences
        if (stated := [f for f in s.facts if not _given(f, packet)])
        and not _valid_labels(s, packet)
        and not (UNAVAILABLE.search(s.text) and SOURCES.search(s.text))
    ]
    return _result(
        "factual_sentences_cited",
        (f.text for _, stated in uncited for f in stated),
        (s.text for s, _ in uncited),
        "sentences stating a figure, date or quotation without a listed label",
    )


_WHERE = {"citation": "cited blocks", "packet": "packet"}


def _sources(sentence: AnswerSentence, packet: GivenPacket, scope: str) -> list[str]:
    """The labels a sentence's facts and names are checked against: those it cites (scope
    `packet`: every block; none when the sentence cites nothing)."""
    return _valid_labels(sentence, packet) if scope == "citation" else list(packet.blocks)


def check_supported(
    sentences: list[AnswerSentence], packet: GivenPacket, scope: str
) -> CheckResult:
    """Each fact against the blocks its sentence cites (scope `packet`: every block), or the
    prompt outside the evidence; a result of written-out arithmetic over supported figures
    passes as derived, named in the detail."""
    unsupported: list[tuple[str, str]] = []
    derived: list[str] = []
    given = [packet.given_facts()] if packet.given else []
    for s in sentences:
        if s.facts and (labels := _sources(s, packet, scope)):
            missing, made = unsupported_facts(s, [packet.facts(x) for x in labels] + given)
            unsupported.extend((s.text, f.text) for f in missing)
            derived.extend(made)
    result = _result(
        "figures_supported",
        (f for _, f in unsupported),
        (t for t, _ in unsupported),
        f"figures, dates or quotations not found in the {_WHERE[scope]}",
    )
    if not derived:
        return result
    note = "derived: " + "; ".join(dict.fromkeys(derived))
    return result.model_copy(update={"detail": f"{result.detail}; {note}".lstrip("; ")})


def check_names(sentences: list[AnswerSentence], packet: GivenPacket, scope: str) -> CheckResult:
    """Each name of a sentence against the blocks it cites (scope `packet`: every block) and
    the given text; a sentence citing nothing is `factual_sentences_cited`'s."""
    missing = [
        (s.text, run)
        for s in sentences
        if (labels := _sources(s, packet, scope))
        for run in missing_names(s.text, [packet.names(x) for x in (*labels, GIVEN)])
    ]
    return _result(
        "names_supported",
        (run for _, run in missing),
        (text for text, _ in missing),
        f"names written in neither the {_WHERE[scope]} nor the given text",
    )


def check_conflicts(cited: set[str], packet: GivenPacket) -> CheckResult:
    if not packet.conflicts:
        return _skip("conflicts_reported", "no conflict flagged")
    missing = [label for group in packet.conflicts for label in group if label not in cited]
    return _result(
        "conflicts_reported", missing, (), "a flagged conflict is not cited on every side"
    )


def _words(text: str) -> str:
    """Lower-case words joined by single spaces, padded: phrases match at word starts."""
    return " " + " ".join(w for w in re.split(r"[\W_]+", text.casefold()) if w) + " "


def check_uncovered(sentences: list[AnswerSentence], packet: GivenPacket) -> CheckResult:
    if not packet.uncovered:
        return _skip("uncovered_facets_declared", "every facet has evidence")
    offending: list[str] = []
    bad_sentences: list[str] = []
    folded = [(s, _words(s.text)) for s in sentences]
    for facet in packet.uncovered:
        phrase = _words(facet).rstrip()  # "return-shipping" is named by "Return shipping costs"
        about = [s for s, text in folded if phrase.strip() and phrase in text]
        answering = [s.text for s in about if not UNAVAILABLE.search(s.text)]
        if answering or not about:
            offending.append(facet)
            bad_sentences.extend(answering)
    return _result(
        "uncovered_facets_declared",
        offending,
        bad_sentences,
        "an uncovered facet is answered, or not said to be unavailable",
    )


def check_abstention(
    sentences: list[AnswerSentence], packet: GivenPacket, answer: str
) -> CheckResult:
    if packet.blocks:
        return _skip("abstention", "the packet has evidence")
    citing = [s.text for s in sentences if s.labels]
    said = bool(UNAVAILABLE.search(answer))
    return _result(
        "abstention",
        [] if said else ["no abstention"],
        citing,
        "a packet without evidence must get an abstention without citations",
    )


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = _WORD.findall(normalize_phrase(text))
    return {tuple(words[i : i + SHINGLE_WORDS]) for i in range(len(words) - SHINGLE_WORDS + 1)}


def check_excluded_text(sentences: list[AnswerSentence], packet: GivenPacket) -> CheckResult:
    if packet.excluded is None:
        return _skip("no_excluded_text", "no request file given")
    if not packet.excluded:
        return _skip("no_excluded_text", "no candidate was excluded by a gate")
    allowed = set().union(*(_shingles(t) for t in packet.blocks.values()))
    leaked: list[tuple[str, str]] = []
    for s in sentences:
        said = _shingles(s.text) - allowed
        if not said:
            continue
        for evidence_id, text in sorted(packet.excluded.items()):
            if said & _shingles(text):
                leaked.append((s.text, evidence_id))
    return _result(
        "no_excluded_text",
        (e for _, e in leaked),
        (t for t, _ in leaked),
        f"runs of {SHINGLE_WORDS} words of excluded candidates",
    )


@dataclass(frozen=True)
class CheckSettings:
    """How a run checks its answers: `scope` (`SCOPES`), what a citation covers
    (`packer.verification.claims.CITATION_SPANS`), and whether `names_supported` fails an
    answer (`gate_names`) or is reported only, the default: on real answers people judged
    supported, sources leave out names (a first name, a qualifier) more often than the
    false-flag budget of a gate allows (docs/verify.md)."""

    scope: Scope = "citation"
    citation_span: str = "sentence"
    gate_names: bool = False


DEFAULTS = CheckSettings()
"""The settings of `evpack verify` without flags (and of the streaming verifier)."""


def verify_answer(
    answer: str,
    packet: GivenPacket,
    run_ids: frozenset[str] = frozenset(),
    scope: str = "citation",
    settings: CheckSettings | None = None,
) -> Verdict:
    """Every check of one answer, in the order of `CheckName` (`SCOPES`: what its figures are
    checked against; the citation checks are `skip` in the packet scope). `settings`, when
    given, decides the scope too."""
    settings = settings or CheckSettings("packet" if scope == "packet" else "citation")
    scope = settings.scope
    sentences = parse_answer(answer, settings.citation_span, packet.sentences)
    cited = {label for s in sentences for label in s.labels}
    checks = [
        check_answered(answer),
        check_labels(sentences, packet),
        check_cites_evidence(sentences, packet, answer),
        check_leaked_ids(sentences, packet, run_ids),
        check_cited(sentences, packet),
        check_supported(sentences, packet, scope),
        check_names(sentences, packet, scope),
        check_conflicts(cited, packet),
        check_uncovered(sentences, packet),
        check_abstention(sentences, packet, answer),
        check_excluded_text(sentences, packet),
    ]
    if scope == "packet":
        checks = [
            _skip(c.name, "packet scope: citations are not checked")
            if c.name in CITATION_CHECKS
            else c
            for c in checks
        ]
    return Verdict(
        checks=checks,
        sentences=len(sentences),
        cited_sentences=sum(1 for s in sentences if _valid_labels(s, packet)),
        labels_cited=sorted(cited, key=lambda label: (len(label), label)),
        advisory=frozenset() if settings.gate_names else frozenset({"names_supported"}),
    )
