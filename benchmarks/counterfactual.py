"""`multihop_rag-conflict`: real news facts beside a counterfactual copy with one fact changed.

The held-out shape "news, both sides of a disagreement kept" has counterfactual
passages edited from true news articles. No visible set has it (RAMDocs' other
sides are other sections of a wiki article, ConflictNQ's fakes are written
anew), so this set builds it from MultiHop-RAG, honestly and reproducibly:

- requests: the answerable queries of `multihop_rag-50` (the same 50 facts a
  query, the same BM25 scores), ids renamed `mc...` so a run holding both sets
  keeps one oracle label set per request;
- the true fact: one of the query's evidence facts, drawn with a generator
  seeded by the query id (`random.Random(f"{SEED}:{id}")`: the same draw on
  every machine and run);
- the counterfactual: that sentence with ONE fact changed as misinformation
  edits news, the kind drawn among those the sentence allows: `number` (a year
  moved by 1 to 3, another number doubled or halved, format kept), `date` (a
  month or weekday swapped for another), `name` (a capitalised name of one to
  three words that other facts of the pool also use, swapped for another name
  of the pool of the same kind and length: a person when its first word is a
  first name of the pool's authors, else an organisation/place/product name),
  `negation` (`not` after the first auxiliary verb) only when no other kind
  applies (it applies to nearly every sentence and would crowd out the
  number, date and name edits misinformation mostly makes);
- it is its own document (`mc<q>.x`, another publisher's host, the same
  headline and publication time: a rewrite of the story the same day);
- its rank: a third of the requests each, by query order, put it among the
  best three, in the middle (ranks 23-27) or low (ranks 43-47) of the
  candidates, its score between its neighbours', so the pair's other member
  keeps its own rank.

Metric: `pair_kept`, both the true fact and its counterfactual reach the
model, whole or as a shown part holding the changed words (`changed`), and
`pair_kept_flagged`, that and the two in one flagged conflict group. The
oracle packs the pair first (shortest first), then the rest by score.
"""

import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.adapters import (
    MULTIHOP_POOL_FILE,
    data_file,
    multihop_cases,
    read_jsonl,
)
from schemas import Candidate, Request

SEED = "multihop_rag-conflict"
CANDIDATES = 50
RANK_SPREAD = ((0, 3), (23, 28), (43, 48))
"""Rank ranges (start, stop) of the counterfactual: top three, middle, low."""
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")  # fmt: skip
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_NUMBER = re.compile(r"(?<![\w.,])\d+(?:,\d{3})*(?:\.\d+)?(?![\w])")
_NAME = re.compile(r"(?<!^)(?<![\w'’-])[A-Z][a-z]+(?:\s[A-Z][a-z]+){0,2}(?![\w'’-])")
_AUX = re.compile(r"\b(is|was|are|were|will|has|have|had|can|could|would|should|does|did)\b"
                  r"(?! not\b)(?!n't)")  # fmt: skip
_NOT_NAMES = frozenset((*MONTHS, *WEEKDAYS, "The", "This", "That", "These", "Those", "It",
                        "In", "On", "At", "For", "But", "And", "He", "She", "They", "We", "I",
                        "His", "Her", "Their", "A", "An", "As", "If", "When", "While"))  # fmt: skip


@dataclass(frozen=True)
class Edit:
    """One changed fact: where in the sentence, what it said and what it says now."""

    kind: str
    start: int
    end: int
    new: str

    def apply(self, text: str) -> str:
        return text[: self.start] + self.new + text[self.end :]


@dataclass(frozen=True)
class NewsConflictCase:
    """A news query whose candidates hold a true fact and its counterfactual copy.

    `changed` is (the words the true fact says, the words the copy says), each
    with its neighbouring words, so a shown part can be checked for the fact.
    """

    request: Request
    true: str
    counterfactual: str
    changed: tuple[str, str]
    kind: str


def _number(value: str, rng: random.Random) -> str:
    """A year moved by 1-3, another number doubled or halved, its format kept."""
    plain = value.replace(",", "")
    decimals = len(plain.partition(".")[2])
    number = float(plain)
    if decimals == 0 and len(plain) == 4 and 1900 <= number <= 2099:
        return str(int(number) + rng.choice((-3, -2, -1, 1, 2, 3)))
    new = number * 2 if number < 2 or rng.random() < 0.5 else number / 2
    text = f"{new:,.{decimals}f}" if "," in value else f"{new:.{decimals}f}"
    return text if text != value else f"{number + 1:.{decimals}f}"


def pool_names(facts: Sequence[str]) -> dict[str, int]:
    """Capitalised names (not at a sentence start) -> how many facts of the pool use them.

    A one-word name the pool also writes in lower case ("Pro" of "iPhone 14 Pro",
    "pro") is a common word, not a name: swapping it would change no fact."""
    counts: dict[str, int] = {}
    common = {w for fact in facts for w in re.findall(r"\b[a-z]+\b", fact)}
    for fact in facts:
        for name in {m.group() for m in _NAME.finditer(fact)} - _NOT_NAMES:
            if " " in name or name.lower() not in common:
                counts[name] = counts.get(name, 0) + 1
    return counts


def name_kind(name: str, first_names: frozenset[str]) -> tuple[str, int]:
    """A person (two words, the first a first name of the pool's authors) or another name,
    and its length in words: a swap keeps both, so a person becomes another person."""
    words = name.split()
    person = len(words) == 2 and words[0] in first_names
    return ("person" if person else "name", len(words))


def edits(text: str, names: dict[str, int], first_names: frozenset[str],
          rng: random.Random) -> dict[str, Edit]:  # fmt: skip
    """The one-fact edit of each kind this sentence allows, the first place it can go."""
    found: dict[str, Edit] = {}
    if number := _NUMBER.search(text):
        found["number"] = Edit("number", *number.span(), _number(number.group(), rng))
    if date := re.search(rf"\b({'|'.join((*MONTHS, *WEEKDAYS))})\b", text):
        same = MONTHS if date.group() in MONTHS else WEEKDAYS
        other = rng.choice([d for d in same if d != date.group()])
        found["date"] = Edit("date", *date.span(), other)
    known = [m for m in _NAME.finditer(text) if names.get(m.group(), 0) >= 2]
    if known:
        match = known[0]
        kind = name_kind(match.group(), first_names)
        others = sorted(n for n in names if n not in text and name_kind(n, first_names) == kind
                        and names[n] >= 2)  # fmt: skip
        if others:
            found["name"] = Edit("name", *match.span(), rng.choice(others))
    if aux := _AUX.search(text):
        found["negation"] = Edit("negation", aux.end(), aux.end(), " not")
    return found


def _around(text: str, start: int, end: int) -> str:
    """The changed words with one word either side: what a shown part must hold."""
    before = text[:start].split()[-1:]
    after = text[end:].split()[:1]
    return " ".join(w for w in [*before, text[start:end].strip(), *after] if w)


def counterfactual(text: str, names: dict[str, int], first_names: frozenset[str],
                   rng: random.Random) -> tuple[str, Edit, tuple[str, str]] | None:  # fmt: skip
    """The sentence with one fact changed, the edit, and the changed words of both sides;
    None when no kind applies."""
    options = edits(text, names, first_names, rng)
    if not options:
        return None
    facts = sorted(k for k in options if k != "negation") or ["negation"]
    edit = options[rng.choice(facts)]
    new = edit.apply(text)
    end = edit.start + len(edit.new)
    return new, edit, (_around(text, edit.start, edit.end), _around(new, edit.start, end))


def _renamed(candidate: Candidate) -> Candidate:
    def rename(value: str) -> str:
        return "mc" + value[2:]

    assert candidate.document_id is not None
    return candidate.model_copy(update={
        "evidence_id": rename(candidate.evidence_id),
        "document_id": rename(candidate.document_id),
        "chunk_id": rename(candidate.chunk_id),
    })  # fmt: skip


def _score_at(ranked: Sequence[Candidate], rank: int) -> float:
    """A score that puts a new candidate at `rank` of these (best first)."""
    scores = [c.retrieval_score for c in ranked]
    if rank == 0:
        return round(scores[0] + 0.5, 6)
    below = scores[rank] if rank < len(scores) else scores[-1] - 1.0
    return round((scores[rank - 1] + below) / 2, 6)


def _copy(true: Candidate, text: str, document: str, score: float) -> Candidate:
    """The counterfactual as its own document: another publisher, the same day and headline."""
    return true.model_copy(update={
        "evidence_id": f"{document}.0",
        "document_id": document,
        "chunk_id": f"{document}#0",
        "source_url": f"https://rewrite.example/{document}",
        "text": text,
        "text_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "retrieval_score": score,
    })  # fmt: skip


def news_conflict_cases(data_dir: Path, limit: int | None = None) -> list[NewsConflictCase]:
    """The answerable queries of `multihop_rag-50`, each with a counterfactual (see module)."""
    pool = list(read_jsonl(data_file(data_dir, MULTIHOP_POOL_FILE)))
    names = pool_names([p["fact"] for p in pool])
    first_names = frozenset(a.split()[0] for p in pool if (a := p.get("author")) and a.split())
    answerable = [c for c in multihop_cases(data_dir, limit, CANDIDATES) if not c.null_query]
    cases = []
    for index, case in enumerate(answerable):
        rng = random.Random(f"{SEED}:{case.request.request_id}")
        ranked = sorted((_renamed(c) for c in case.request.candidates),
                        key=lambda c: (-c.retrieval_score, c.evidence_id))  # fmt: skip
        evidence = sorted("mc" + e[2:] for e in case.evidence)
        chosen = rng.choice(evidence)
        true = next(c for c in ranked if c.evidence_id == chosen)
        made = counterfactual(true.text, names, first_names, rng)
        if made is None:
            continue
        text, edit, changed = made
        start, stop = RANK_SPREAD[index % len(RANK_SPREAD)]
        rank = min(rng.randrange(start, stop), len(ranked))
        document = f"mc{case.request.request_id.split('-', 1)[1]}.x"
        copy = _copy(true, text, document, _score_at(ranked, rank))
        request = case.request.model_copy(update={
            "request_id": "mc" + case.request.request_id[2:],
            "candidates": (*ranked[:rank], copy, *ranked[rank:]),
        })  # fmt: skip
        cases.append(NewsConflictCase(request, true.evidence_id, copy.evidence_id, changed,
                                      edit.kind))  # fmt: skip
    return cases
