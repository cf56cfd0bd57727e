"""Complete smaller units: a passage's best contiguous whole sentences.

When a passage does not fit the budget left, its best run of complete
sentences may (seed 002: "prefer a complete smaller unit over mid-sentence
truncation"). A unit never starts or ends inside a sentence: sentence ends are
`.`, `!` or `?` (and any closing quotes or brackets) followed by whitespace
and a capital, digit or opening quote, except after a common abbreviation or
a single initial ("Mr.", "U.S.", "C. Punnett"). Rejected: cutting at the
token budget, as LlamaIndex's truncating packer does, which leaves a half
sentence whose meaning may be the opposite of the whole.
"""

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from packer.native import kernels
from packer.records import fold_case

_END = re.compile(r"[.!?][\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])")
_ABBREVIATIONS = frozenset(
    ("mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "inc", "co", "corp", "ltd", "vs", "no",
     "gen", "gov", "sen", "rep", "lt", "col", "sgt", "capt", "fig", "jan", "feb", "mar", "apr",
     "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "approx", "est")
)  # fmt: skip


def _ends_abbreviation(text: str, end: int) -> bool:
    """Whether the period at `end` closes an abbreviation or an initial, not a sentence."""
    start = end
    while start > 0 and (text[start - 1].isalpha() or text[start - 1] == "."):
        start -= 1
    word = text[start:end].strip(".")
    return len(word) == 1 or "." in word or word.lower() in _ABBREVIATIONS


_COMPLETE_START = re.compile(r"[\"'“‘(\[]?[A-Z0-9]")
_COMPLETE_END = re.compile(r"[.!?][\"'”’)\]]*$")


def complete(sentence: str) -> bool:
    """A whole sentence: it opens with a capital or digit and closes with `.`, `!` or `?`.

    The first and last pieces of a passage that upstream chunking cut out of
    the middle of a sentence are not, and a unit never includes them.
    """
    return bool(_COMPLETE_START.match(sentence) and _COMPLETE_END.search(sentence))


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) offsets of each sentence of `text`, surrounding whitespace excluded."""
    spans = []
    start = len(text) - len(text.lstrip())
    for match in _END.finditer(text):
        if text[match.start()] == "." and _ends_abbreviation(text, match.start()):
            continue
        end = match.start() + len(match.group().rstrip())
        if end > start:
            spans.append((start, end))
        start = match.end()
    end = len(text.rstrip())
    if end > start:
        spans.append((start, end))
    return spans


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence of a passage: its offsets, whether it is complete, its folded text.

    `folded` (case folded, `records.fold_case`) is what question terms are
    sought in; the whole canonical form would cost a regex pass per sentence
    for a difference only in punctuation and number formats.
    """

    start: int
    end: int
    complete: bool
    folded: str


def sentence_bounds(text: str) -> list[tuple[int, int, bool]]:
    """Each sentence's [start, end) offsets and whether it is `complete`.

    `packer/_native.c` computes the same in one pass over the characters (a test
    holds the two equal); this is its definition, and the path taken where no C
    compiler was present at install.
    """
    return [(a, b, complete(text[a:b])) for a, b in sentence_spans(text)]


def bounds_of(text: str) -> list[tuple[int, int, bool]]:
    """`sentence_bounds`, by the C kernel when it was built."""
    if kernels:
        return kernels.sentence_bounds(text, _ABBREVIATIONS)
    return sentence_bounds(text)


def sentences_of(text: str) -> tuple[Sentence, ...]:
    """The sentences of `text`. A unit is sought each time a passage does not fit, and
    passages recur across questions: a worker's `PackerRuntime` memoizes this per text.

    Folding ASCII is lowercasing, character for character: such a text is folded once
    and each sentence's fold sliced from it (a call per sentence saved; most passages
    are ASCII). Any other text is folded sentence by sentence, as NFKC and case folding
    may change lengths and read across a sentence's bounds."""
    bounds = bounds_of(text)
    if text.isascii():
        lowered = text.lower()
        return tuple(Sentence(a, b, done, lowered[a:b]) for a, b, done in bounds)
    return tuple(Sentence(a, b, done, fold_case(text[a:b])) for a, b, done in bounds)


_PRONOUN = re.compile(
    r"[\"'“‘(\[]?(?:he|she|they|it(?!\s+(?:is|was)\s+(?:not\s+)?\w+\s+(?:that|to)\b))\s", re.I
)


def context_start(text: str, start: int, sentences: Sequence[Sentence]) -> int | None:
    """Where the sentence a unit starting at `start` leans on begins: the complete sentence
    before it, when the unit opens with a subject pronoun ("He", "They", "It was
    released"; not an expletive "It is not true that"); None when it does not, or no
    complete sentence precedes it. Rejected: the passage's opening sentence, which is
    often not the one the pronoun points to; possessives and demonstratives too ("Its",
    "This": ConflictNQ both sides kept at 150 tokens 37.5 -> 35.7, longer units
    displacing the other side)."""
    if not _PRONOUN.match(text, start):
        return None
    before = [s for s in sentences if s.end <= start]
    return before[-1].start if before and before[-1].complete else None


def best_unit(
    sentences: Sequence[Sentence],
    held: Sequence[frozenset[str]],
    value: Callable[[frozenset[str]], float],
    fits: Callable[[int, int], bool],
    room: int,
) -> tuple[int, int] | None:
    """The most valuable run of complete sentences that fits, as sentence indices [i, j].

    A run is worth `value` of the union of what its sentences hold (`held[k]`
    for sentence k: e.g. the question terms it contains); its tokens are
    estimated at four characters a token (an estimate above `room` rules a run
    out unchecked) and `fits(i, j)` is the exact test. Among runs of equal value
    the longer one wins (more context in the room that would otherwise go
    unused), then the earlier. Returns None when no run of value above zero
    fits, or the passage is a single sentence (then the unit would be the whole
    passage, which did not fit).

    Cost: the runs from each first sentence grow one sentence at a time and
    their union with them, so n sentences cost O(n²) unions and value calls
    plus sorting the candidate runs, and `fits` (a tokenizer call) runs only
    until the first run that fits. Rejected: scoring each run by uniting its
    sentences afresh, cubic in the sentences (a long passage was a visible
    share of packing time).
    """
    if len(sentences) < 2:
        return None
    last = len(sentences) - 1
    options: list[tuple[float, int, int, int]] = []
    for i, first in enumerate(sentences):
        run: frozenset[str] = frozenset()
        score = 0.0
        for j in range(i, len(sentences)):
            if not sentences[j].complete:
                break  # a run of complete sentences only
            length = sentences[j].end - first.start
            if length // 4 > room or (i, j) == (0, last):
                break  # too long, or the whole passage (not a smaller unit)
            if j == i or not held[j] <= run:
                run = run | held[j]
                score = value(run)
            if score > 0:
                options.append((-score, -length, i, j))
    for _, _, i, j in sorted(options):
        if fits(i, j):
            return i, j
    return None


def unit_span(
    span: tuple[int, int] | None, text: str, unit: tuple[int, int]
) -> tuple[int, int] | None:
    """The unit's offsets in the document revision, when the candidate's span locates its text."""
    if span is None or span[1] - span[0] != len(text):
        return None
    return span[0] + unit[0], span[0] + unit[1]
