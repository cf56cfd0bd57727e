"""What an answer claims: its sentences, the labels each cites, and the figures, dates and
quoted phrases each states, to be checked against the blocks it cites (`packer.verify`).

Sentences and citations: `packer.answer_sentences`; figures and dates, read
so that equal values compare equal whatever their spelling: `packer.figures`.
"""

import re
from dataclasses import dataclass

from packer.answer_sentences import cited_labels, split_sentences, strip_citations
from packer.figures import Fact, figure_facts, normalize_phrase

_QUOTE = re.compile(r"\"([^\"\n]{2,300})\"|“([^”\n]{2,300})”")
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class Sentence:
    """One sentence of an answer, its citations and its checkable facts."""

    text: str
    labels: tuple[str, ...]
    """Every label it cites, as written (a range expanded, or kept whole when it cannot be)."""
    facts: tuple[Fact, ...]


def sentence_facts(text: str) -> tuple[Fact, ...]:
    """The figures, dates and quoted phrases a sentence states (citations removed)."""
    plain = strip_citations(text)
    facts: list[Fact] = []
    for m in _QUOTE.finditer(plain):
        phrase = normalize_phrase(m[1] or m[2]).strip(" .,;:!?'\"")
        if phrase:
            facts.append(Fact("quote", m[0], phrase))
    if not _DIGIT.search(plain):
        return tuple(facts)  # every date and figure has a digit
    return (*facts, *figure_facts(plain))


def parse_answer(answer: str) -> list[Sentence]:
    """Every sentence of an answer with its citations and facts."""
    return [Sentence(s, cited_labels(s), sentence_facts(s)) for s in split_sentences(answer)]
