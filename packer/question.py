"""A request's question, read once: its canonical words, folded and as written, its content
words, and the kind of value that answers it.

Every step that weighs passages against the question reads this one reading: dedup's
slot conflicts (`slot_conflicts`), the selection's new-terms weight and answer
evidence (`answer_evidence`), the source links and named days (`subjects`). So the
question is read once a request, and no step reads it otherwise than another.
Rejected: each step reading the text itself (up to ten tokenizations a request in six
modules, the request's path going back and forth between `records` and `typed_claims`
for it).
"""

from dataclasses import dataclass
from typing import Literal

from packer.records import canonical_words, content_terms, name_words

SlotKind = Literal["number", "date", "name"]

_NUMBER_QUESTIONS = (
    "how many", "how much", "how long", "how old", "how tall", "how far", "how big",
    "how high", "how large", "how deep", "what percentage", "what percent", "population",
)  # fmt: skip
_DATE_QUESTIONS = ("when", "what year", "which year", "what date", "what day")
_NAME_QUESTIONS = ("who", "whom", "whose", "where")
_SLOT_WORDS = frozenset(
    ("many", "much", "long", "old", "tall", "far", "big", "high", "large", "deep", "percentage",
     "percent", "population", "year", "date", "day", "number", "made", "first", "last")
)  # fmt: skip


@dataclass(frozen=True)
class Question:
    """A question as the packer reads it (`read_question`)."""

    text: str
    words: tuple[str, ...]
    """Its canonical words, case-folded (`records.canonical_words`)."""
    cased: tuple[str, ...]
    """Its canonical words as written (names are told by their capitals)."""
    terms: frozenset[str]
    """Its content words (`records.content_terms`): evidence bringing terms no packed
    block has yet is likely about another part of the question."""
    names: frozenset[str]
    """The words it writes as names (capitalized, past its first word), folded."""
    slot: SlotKind | None
    """What kind of value answers it: a number, a date, a name, or none of them."""
    slot_words: frozenset[str]
    """Its content words that only say which kind of value is asked for ("many", "year")."""
    stems: frozenset[str]
    """Its content words without their inflection (`stem`): what passages are searched for."""

    @property
    def joined(self) -> str:
        """Its canonical words as one string, for phrase matching."""
        return " ".join(self.words)


def read_question(text: str) -> Question:
    """The packer's one reading of a question."""
    words, cased = tuple(canonical_words(text)), tuple(canonical_words(text, fold=False))
    terms = content_terms(words)
    return Question(
        text=text,
        words=words,
        cased=cased,
        terms=terms,
        names=name_words(cased),
        slot=_slot(" " + " ".join(words) + " "),
        slot_words=terms & _SLOT_WORDS,
        stems=frozenset(stem(t) for t in terms),
    )


_INFLECTIONS = ("ings", "ing", "ies", "ied", "ed", "es", "s")
_NO_PLURAL = ("ss", "us", "is")
"""A final "s" after these is no inflection ("business", "status", "analysis")."""
MIN_STEM = 4
"""Letters a stem keeps at least: "news" and "uses" stay whole."""


def stem(term: str) -> str:
    """A content word without its inflection, for finding it in a passage as a substring.

    The questions paraphrase their evidence: "billions" for "billion", "accused" asked
    of "accusations", "companies" of "company". Passages are searched for a
    question's terms as substrings of their canonical text (`records.contained`), so
    a stem is a prefix that finds every inflection ("compan" finds "company" and
    "companies"). Only inflections go: derivations change what is said
    ("competitiveness" is no "competition"). Measured on every visible set at
    150/256/512 (all questions, MultiHop-RAG with the joint publisher mentions and
    the weighted share, `packer.sources`): `multihop_rag-50` 50.1/66.4/82.5 ->
    50.3/68.5/82.8, ConflictNQ both sides kept 47.7/72.1/96.5 -> 49.4/73.8/96.7,
    MultiHop-RAG 60.8/86.0/100 -> 61.3/85.5/100, HotpotQA, hotpotqa-notitle and
    RAMDocs within 0.2 points. Rejected: derivational suffixes too ("-ness",
    "-ation", "-ity", "-ment", "-ency") within 0.3 points of these on every set
    (kept simple), with stems of three letters (`multihop_rag-50` -1.2/-0.9 at
    150/256); stems for the publisher's share alone (`multihop_rag-50` -2.3 at
    150 on 300 queries). The stems search passages only: what answers or sides
    read (`answers`, `statements`) compares whole words, and takes the question's
    terms.
    """
    if not term.endswith(_INFLECTIONS) or term.endswith(_NO_PLURAL) or len(term) <= MIN_STEM:
        return term  # most terms: three tests in C, not one a suffix
    for suffix in _INFLECTIONS:
        if term.endswith(suffix) and len(term) - len(suffix) >= MIN_STEM:
            return term[: -len(suffix)]
    return term


_SLOT_PHRASES: tuple[tuple[SlotKind, tuple[str, ...]], ...] = tuple(
    (kind, tuple(f" {q} " for q in phrases))
    for kind, phrases in (
        ("number", _NUMBER_QUESTIONS),
        ("date", _DATE_QUESTIONS),
        ("name", _NAME_QUESTIONS),
    )
)
"""Each slot's phrases, spaced at both ends once here rather than in every question."""


def _slot(spaced: str) -> SlotKind | None:
    """The slot a question (its canonical words, spaced at both ends) asks for: the first
    kind (number, date, name) one of whose phrases it holds."""
    for kind, phrases in _SLOT_PHRASES:
        for phrase in phrases:
            if phrase in spaced:
                return kind
    return None
