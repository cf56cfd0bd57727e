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
from collections.abc import Callable

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


def best_unit(
    text: str,
    value: Callable[[str], float],
    cost: Callable[[str], int],
    fits: Callable[[str], bool],
    room: int,
) -> tuple[int, int] | None:
    """The most valuable run of whole sentences of `text` that fits, as offsets.

    `value` scores a run's text, `cost` estimates its tokens cheaply (an
    estimate above `room` rules a run out unchecked) and `fits` is the exact
    test. Among runs of equal value the longer one wins (more context in the
    room that would otherwise go unused), then the earlier. Returns None when
    no run of value above zero fits, or the text is a single sentence (then
    the unit would be the whole passage, which did not fit).
    """
    spans = sentence_spans(text)
    if len(spans) < 2:
        return None
    whole = [complete(text[s:e]) for s, e in spans]
    sentence_cost = [cost(text[s:e]) for s, e in spans]
    options: list[tuple[float, int, int, int]] = []
    for i in range(len(spans)):
        total = 0
        for j in range(i, len(spans)):
            if not whole[j]:
                break  # a run of complete sentences only
            total += sentence_cost[j]
            if total > room:
                break
            if (i, j) == (0, len(spans) - 1):
                break  # the whole passage is not a smaller unit
            score = value(text[spans[i][0] : spans[j][1]])
            if score > 0:
                options.append((-score, -(spans[j][1] - spans[i][0]), i, j))
    for _, _, i, j in sorted(options):
        unit = text[spans[i][0] : spans[j][1]]
        if fits(unit):
            return spans[i][0], spans[j][1]
    return None


def unit_span(
    span: tuple[int, int] | None, text: str, unit: tuple[int, int]
) -> tuple[int, int] | None:
    """The unit's offsets in the document revision, when the candidate's span locates its text."""
    if span is None or span[1] - span[0] != len(text):
        return None
    return span[0] + unit[0], span[0] + unit[1]
