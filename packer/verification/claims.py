"""What an answer claims: its sentences, the labels each cites, and the figures, dates and
quoted phrases each states, to be checked against the blocks it cites
(`packer.verification.checks`).

Sentences and citations: `packer.verification.answer_sentences`; figures and dates, read
so that equal values compare equal whatever their spelling: `packer.verification.figures`.
"""

import re
from dataclasses import dataclass, replace

from packer.verification.answer_sentences import cited_labels, split_sentences, strip_citations
from packer.verification.arithmetic import Derivation, derivations
from packer.verification.figures import Fact, figure_facts, normalize_phrase
from packer.verification.quoted_terms import quotation_key

_QUOTE = re.compile(r"\"([^\"\n]{2,300})\"|“([^”\n]{2,300})”")
_DIGIT = re.compile(r"\d")
QUOTATION_WORDS = 4
"""A quoted span of this many words or more is a quotation, checked verbatim; a shorter
one is a term in quotes ("the "chicken or egg" debate", ""STANAGs""), checked as words
each present in a cited block, case- and inflection-insensitive
(`packer.verification.quoted_terms.word_forms`). Measured on the real answers' tuning split
(docs/verify.md)."""


@dataclass(frozen=True)
class AnswerSentence:
    """One sentence of an answer, its citations and its checkable facts."""

    text: str
    labels: tuple[str, ...]
    """Every label it cites, as written (a range expanded, or kept whole when it cannot be)."""
    facts: tuple[Fact, ...]
    derived: tuple[Derivation, ...] = ()
    """Arithmetic the sentence writes out (`packer.verification.arithmetic`): its results are
    `derived` when their operands are supported."""


def sentence_facts(text: str) -> tuple[Fact, ...]:
    """The figures, dates and quoted phrases a sentence states (citations removed)."""
    return _plain_facts(strip_citations(text))


def _plain_facts(plain: str) -> tuple[Fact, ...]:
    facts: list[Fact] = []
    for m in _QUOTE.finditer(plain):
        phrase = normalize_phrase(m[1] or m[2]).strip(" .,;:!?'\"")
        words = re.findall(r"\w+(?:['’]s)?", phrase)
        if len(words) >= QUOTATION_WORDS:
            facts.append(Fact("quote", m[0], quotation_key(phrase)))
        elif words:
            facts.append(Fact("term", m[0], " ".join(words)))
    if not _DIGIT.search(plain):
        return tuple(facts)  # every date and figure has a digit
    return (*facts, *figure_facts(plain))


_WRAPPED = re.compile(
    r"\s*(?:\"(?P<straight>.+)\"|“(?P<curly>.+)”)(?P<tail>(?:\s*\[[^\]\n]*\])*\s*)", re.S
)
"""An answer wrapped whole in quotation marks, its citations after the closing one."""


def unwrapped(answer: str) -> str:
    """An answer that is one quotation as a whole, without its marks: models wrap a whole
    summary in quotes, which is prose, not a quotation of the evidence. Not when the marks
    open and close two quotations ("\"Up\" and \"Down\" were hits")."""
    m = _WRAPPED.fullmatch(answer)
    if m is None:
        return answer
    body = m["straight"] if m["straight"] is not None else m["curly"]
    if m["straight"] is not None:
        first = body.find('"')
        closes = first >= 0 and (first == 0 or not body[first - 1].isspace())
    else:
        close, opening = body.find("”"), body.find("“")
        closes = close >= 0 and (opening < 0 or close < opening)
    return answer if closes else body + m["tail"]


CITATION_SPANS = ("sentence", "paragraph")
"""What a citation covers: its own sentence (the default), or, for answers that cite once
after a paragraph, also the sentences of its paragraph that cite nothing themselves."""
_PARAGRAPH = re.compile(r"\n\s*\n")


MEMO_SENTENCES = 512
"""How many sentences a memo (`parse_answer`) keeps: a packet verified against many answers
(retries, several models) reads each repeated sentence once, in bounded memory."""


def parse_answer(
    answer: str, span: str = "sentence", memo: dict[str, AnswerSentence] | None = None
) -> list[AnswerSentence]:
    """Every sentence of an answer with its citations and facts (`unwrapped` first); with
    the `paragraph` span (`CITATION_SPANS`), a sentence citing nothing takes the labels its
    paragraph (text up to a blank line) cites. Rejected: only the next citation after the
    sentence (a paragraph citing "[E1] ... [E2]" at its end is one citation of both).
    `memo` (the packet's, `GivenPacket.sentences`) keeps sentences read before."""
    sentences = []
    text = unwrapped(answer)
    for paragraph in _PARAGRAPH.split(text) if span == "paragraph" else [text]:
        parsed = []
        for s in split_sentences(paragraph):
            sentence = memo.get(s) if memo is not None else None
            if sentence is None:
                sentence = _sentence(s)
                if memo is not None and len(memo) < MEMO_SENTENCES:
                    memo[s] = sentence
            parsed.append(sentence)
        if span == "paragraph":
            cover = tuple(dict.fromkeys(label for s in parsed for label in s.labels))
            parsed = [s if s.labels else replace(s, labels=cover) for s in parsed]
        sentences.extend(parsed)
    return sentences


def _sentence(text: str) -> AnswerSentence:
    """One sentence read: its citations, facts and written-out arithmetic."""
    plain = strip_citations(text)
    facts = _plain_facts(plain)
    derived = derivations(plain) if len(facts) >= 3 else ()  # two operands, a result
    return AnswerSentence(text, cited_labels(text), facts, derived)
