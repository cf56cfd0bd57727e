"""What each sentence of a passage states: its content words and its polarity.

A statement is a complete sentence (`packer.units`) read as the set of its
content words (canonical, neither stopwords nor wording nor polarity words)
and whether it is negated (an odd number of negation words in its main clause:
`not`, `never`, `no` (`no longer`), `n't`, `cannot`, ...; "it is not guaranteed
that X is not free" is two negations and affirms; `main_clause_negated`). Two
statements of different documents
that share most of their content words and differ in polarity say one thing
and its opposite (`packer.polarity`); a conflict member's statement closest
to its partner's is the unit that states its side (`side_unit`). A function
of the text alone: a worker's `PackerRuntime` memoizes it per distinct text.
Rejected: counting any negation word as a flip ("neither ... nor" is one
negation, so `nor` is not counted), and reading polarity from the whole
passage (one negated sentence among ten is the passage's only disagreement).
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass

from packer.native import kernels
from packer.records import (
    MODALS,
    NEGATORS,
    STOPWORDS,
    canonical_words,
    folded_form,
    holds_polarity_word,
    scan_words,
)
from packer.units import Sentence, bounds_of

_WORDING = frozenset(
    ("has", "have", "had", "been", "being", "be", "am", "do", "done", "said", "says", "also",
     "then", "than", "so", "but", "just", "nor", "longer", "any", "ever", "yet", "still")
)  # fmt: skip
_NOT_CONTENT = STOPWORDS | _WORDING | NEGATORS | MODALS


@dataclass(frozen=True, slots=True)
class Statement:
    """One complete sentence: its offsets, content words and polarity."""

    start: int
    end: int
    content: frozenset[str]
    negated: bool


_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”")


def sentence_words(
    folded: str, not_content: frozenset[str], negators: frozenset[str]
) -> tuple[frozenset[str], int]:
    """The content words of a folded sentence (`records.folded_form`): its canonical
    words longer than a character and not in `not_content`; and how many of its words
    are in `negators`, where `no` before a number is the abbreviation of "number"
    ("No. 5"). `packer/_native.c` computes the same in one pass (a test holds the two
    equal): this is its definition, and the path taken without a C compiler."""
    words = scan_words(folded)
    content = frozenset(w for w in words if len(w) > 1 and w not in not_content)
    return content, sum(
        1
        for k, w in enumerate(words)
        if w in negators and not (w == "no" and k + 1 < len(words) and words[k + 1][0].isdigit())
    )


_sentence_words = kernels.sentence_words if kernels else sentence_words

_RELATIVE = "which|who|whom|whose"
_SUBORDINATE = f"although|though|whereas|because|unless|{_RELATIVE}"
_ASIDE = re.compile(
    rf"(?:,\s+(?:{_RELATIVE})|^(?:{_SUBORDINATE}|while|since|if))\b(?:[^,;:]|,(?!\s))*,(?=\s)"
)
"""A relative clause set off by commas, or a subordinate clause opening the sentence up
to its comma: its own clause, the sentence around it one (a comma inside a number is
none)."""
_CLAUSE_BREAK = re.compile(
    rf"[;:](?=\s)|\s[-–—]+\s|,\s+(?=(?:and|but|yet|or|so|while|since|{_SUBORDINATE})\b)"
    rf"|\s(?=(?:{_SUBORDINATE})\b)"
)
"""Where one clause ends and the next begins: a semicolon, a colon or a dash between
words, a comma before a coordinating word or a subordinator, and a subordinator or a
relative pronoun ("women who drank none": the relative clause is not the sentence's
polarity). `while` and `since` only after a comma: "while travelling", "since 2010"
are no clauses."""


def clauses(folded: str) -> list[str]:
    """A folded sentence's clauses, asides set off by commas (", which did not last,")
    apart from the sentence they interrupt."""
    asides = _ASIDE.findall(folded)
    rest = _ASIDE.sub(",", folded) if asides else folded
    return [*_CLAUSE_BREAK.split(rest), *asides]


def main_clause_negated(folded: str, negations: int | None = None) -> bool:
    """Whether a folded sentence's main clause is negated: the clause holding the most of
    its content words (the first of equals), negated by an odd number of negation words
    in that clause alone. A negation scopes over its own clause ("found no evidence that
    coffee lowers the risk" is negated), not over a clause joined to it ("the trial did
    not last long, but it found that coffee lowers the risk" affirms, and so does "women
    who drank none" inside a sentence saying who had a lower risk). Rejected: the parity
    of the whole sentence's negation words, which "did not lower the risk: glucose did
    not change" (two negations) read as affirming. `negations`, the sentence's own count
    when known, decides alone where the sentence can only be one clause (`_one_clause`:
    no mark or word a clause opens with), without the clause search (6.5 µs a sentence;
    spared for 17% of the negated sentences of the speed bench's paragraphs)."""
    if negations is not None and _one_clause(folded):
        return negations % 2 == 1
    best = (-1, False)
    for clause in clauses(folded):
        content, count = _sentence_words(clause, _NOT_CONTENT, NEGATORS)
        if len(content) > best[0]:
            best = (len(content), count % 2 == 1)
    return best[1]


_CLAUSE_MARKS = (",", ";", ":", "-", "–", "—", "though", "whereas", "because", "unless",
                 "which", "who")  # fmt: skip
"""What every aside and clause break holds: a comma, a semicolon, a colon or a dash, or a
subordinator or relative pronoun ("although" holds "though", "whom" and "whose" "who")."""


def _one_clause(folded: str) -> bool:
    """Whether `clauses(folded)` can only be `[folded]`: it holds no mark or word an aside
    or a clause break needs (0.5 µs: a search each at C speed, against `re`'s ~30 ns a
    character for each pattern)."""
    return all(mark not in folded for mark in _CLAUSE_MARKS)


@dataclass(frozen=True, slots=True)
class Statements:
    """A passage's statements, the content words of all of them, and its negated ones
    (what a polarity pair starts from: most passages have none)."""

    all: tuple[Statement, ...]
    words: frozenset[str]
    negated: tuple[Statement, ...]


_PEEK = 16
"""Characters read past a sentence's end for the number a closing `No.` abbreviates."""
_CLOSING_NO = re.compile(r"\bno\W*$")
"""A folded sentence whose last word may be `no`: only then is the text after it read."""


def _closes_with_no(folded: str) -> bool:
    """`_CLOSING_NO.search(folded)`, tried only where the last "no" stands: after a match
    nothing but non-word characters follows, so no other "no" can, and the search from
    every position (~30 ns a character in `re`, for every complete sentence) is one
    match. `\b` there still reads the character before it."""
    at = folded.rfind("no")
    return at >= 0 and _CLOSING_NO.match(folded, at) is not None


def _number_after(text: str, end: int) -> str:
    """The first canonical word after `end` when it is a number, else nothing."""
    after = canonical_words(text[end : end + _PEEK])[:1]
    return after[0] if after and after[0][0].isdigit() else ""


def statements_of(text: str, sentences: Sequence[Sentence]) -> Statements:
    """The complete sentences of `text` (its `sentences`) as statements."""
    out = [
        _statement(text, s.start, s.end, folded_form(text[s.start : s.end]))
        for s in sentences
        if s.complete
    ]
    words = frozenset().union(*(x.content for x in out))
    return Statements(tuple(out), words, tuple(x for x in out if x.negated))


def negated_statements_of(text: str) -> tuple[Statement, ...]:
    """The negated statements of `text` (`statements_of(...).negated`), reading only its
    complete sentences that hold a polarity word (`NEGATORS`): what a polarity pair starts
    from. A sentence negated holds one: its negations are counted in its words less those
    quoted or cut off, plus a number after a closing `No` (a test holds the two equal).
    Found without a str per word (`records.holds_polarity_word`), from the sentence
    bounds alone (`units.bounds_of`: no folded copy of every sentence): a passage holding
    a polarity word has three or four complete sentences, one of them negated or not at
    all, and its negated statements cost 18 µs against 32 for its sentences and all of
    its statements."""
    out = []
    for start, end, complete in bounds_of(text):
        if complete:
            folded = folded_form(text[start:end])
            if holds_polarity_word(folded):
                statement = _statement(text, start, end, folded)
                if statement.negated:
                    out.append(statement)
    return tuple(out)


def _statement(text: str, start: int, end: int, folded: str) -> Statement:
    """The complete sentence `text[start:end]` (`folded`: its `folded_form`) as a
    statement. A negation inside double quotes is a title's or a speaker's ("Don't Drink
    the Water"), not the sentence's polarity; nor is a closing `No .` whose number the
    sentence bounds cut off ("assign it to No . 86 Wing": `_number_after` reads the number
    that follows)."""
    written = text[start:end]
    content, negations = _sentence_words(folded, _NOT_CONTENT, NEGATORS)
    quoted = '"' in written or "“" in written
    read = folded_form(_QUOTED.sub(" ", written)) if quoted else folded
    if _closes_with_no(read):
        read = f"{read} {_number_after(text, end)}"
    if read is not folded:
        _, negations = _sentence_words(read, _NOT_CONTENT, NEGATORS)
    negated = negations > 0 and main_clause_negated(read, negations)
    return Statement(start, end, content, negated)


def same_statement(a: Statement, b: Statement) -> bool:
    """Whether two statements say the same thing, polarity aside: at least three content
    words in common, covering at least `SAME_SHARE` of the smaller one and half of the
    larger (an added qualifier such as "it is not guaranteed that" keeps it one statement).
    """
    common = len(a.content & b.content)
    small, large = sorted((len(a.content), len(b.content)))
    return common >= 3 and common >= SAME_SHARE * small and common >= LARGER_SHARE * large


SAME_SHARE = 0.8
"""The share of the smaller statement's content words the larger must hold."""
LARGER_SHARE = 0.67
"""The share of the larger statement's content words the two must share."""


def side_unit(
    mine: Sequence[Statement], theirs: Sequence[Statement], terms: frozenset[str] = frozenset()
) -> Statement | None:
    """The statement of a conflict member where it departs from its partner: of the
    statements the partner does not also make (same content words and polarity), the
    one nearest one of the partner's (the changed figure, the negated sentence), the
    unit that states this member's side. Prefers a polarity opposite to that nearest
    statement's, then more content words shared with it plus question `terms` held, then
    the earlier. None when no such statement shares two content words with the partner.
    Rejected: the nearest statement whatever it says (a sentence both sides share is
    nearest of all, and says nothing of this side)."""
    said = {(o.content, o.negated) for o in theirs}
    best: tuple[int, int, int] | None = None
    found = None
    for k, statement in enumerate(mine):
        if (statement.content, statement.negated) in said:
            continue
        held = len(statement.content & terms)
        for other in theirs:
            common = len(statement.content & other.content)
            if common < 2:
                continue
            key = (int(statement.negated != other.negated), common + held, -k)
            if best is None or key > best:
                best, found = key, statement
    return found
