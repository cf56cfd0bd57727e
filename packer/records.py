"""The packer's working record: a gated candidate with its derived facts computed once."""

import hashlib
import string
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache

from schemas import Candidate


def normalize_text(text: str) -> str:
    """Unicode NFKC, case-folded, whitespace collapsed: the exact-duplicate key."""
    folded = text.lower() if text.isascii() else unicodedata.normalize("NFKC", text).casefold()
    if folded.isprintable():  # then its only whitespace is the space: collapse runs in C
        while "  " in folded:
            folded = folded.replace("  ", " ")
        return folded.strip(" ")
    return " ".join(folded.split())


def word_count(text: str, normalized: str) -> int:
    """Whitespace-separated words of `text`, given its normalized form.

    Each costs at least one token: no tiktoken pre-token spans two words.
    """
    if text.isascii():  # normalizing ASCII only lowers case and collapses whitespace
        return normalized.count(" ") + 1 if normalized else 0
    return len(text.split())


def sha256_hex(text: str) -> str:
    """SHA-256 of the UTF-8 bytes: the provenance hash rule."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


OPENING_WORDS = 32
"""A text's opening words are its first this many (normalized): redundancy is judged on them."""
_KEY_WORDS = 6
_KEY_SCAN = 24


def lowercase_words(text: str, scan: int = -1) -> list[str]:
    """The words (of the first `scan` words, or all), stripped of surrounding
    punctuation, that have letters and no capital.

    What they drop are the values a conflict is about: numbers, dates,
    capitalized names.
    """
    words = text.split(None, scan)
    if 0 <= scan < len(words):
        words.pop()  # the unsplit rest of the text
    stripped = [w.strip(string.punctuation) for w in words]
    return [w for w in stripped if w.islower()]


def skeleton_key(text: str) -> tuple[str, ...]:
    """The first lowercase words of the text: equal skeletons have equal keys.

    Read from the first words only, unless those hold too few.
    """
    words = lowercase_words(text, _KEY_SCAN)
    if len(words) < _KEY_WORDS:
        words = lowercase_words(text)
    return tuple(words[:_KEY_WORDS])


@dataclass(frozen=True, slots=True)
class TextFacts:
    """What the packer derives from a text alone.

    `sha256` is None for a text that is not valid Unicode (a lone surrogate);
    `opening` holds its first `OPENING_WORDS` normalized words, each once (a
    tuple: half the memory of a set, and as fast to intersect with one).
    """

    sha256: str | None
    normalized: str
    words: int
    skeleton_key: tuple[str, ...]
    opening: tuple[str, ...]


@lru_cache(maxsize=32_768)
def text_facts(text: str) -> TextFacts:
    """The facts of `text`, computed once per distinct text per worker.

    Retrieval returns the same passages to many questions, so most texts recur;
    the memo is bounded (LRU) and holds only facts of the text itself.
    """
    try:
        digest: str | None = sha256_hex(text)
    except UnicodeEncodeError:
        digest = None
    normalized = normalize_text(text)
    opening = tuple(dict.fromkeys(normalized.split(" ", OPENING_WORDS)[:OPENING_WORDS]))
    return TextFacts(digest, normalized, word_count(text, normalized), skeleton_key(text), opening)


def score_of(candidate: Candidate) -> float:
    """The ranking score: the reranker's when present, else the retriever's."""
    return (
        candidate.rerank_score if candidate.rerank_score is not None else candidate.retrieval_score
    )


@dataclass(slots=True)
class Evidence:
    """A candidate that passed the gates; mutable only while dedup merges it.

    `derived_from` names the other candidates folded into this one (exact
    duplicates, merged overlapping spans): they reach the prompt through it.
    """

    candidate: Candidate
    document_id: str
    revision_id: str
    effective_at: datetime | None
    text: str
    facts: TextFacts
    score: float
    facets: tuple[str, ...]
    span: tuple[int, int] | None
    derived_from: list[str] = field(default_factory=list)

    @property
    def evidence_id(self) -> str:
        return self.candidate.evidence_id

    @property
    def normalized(self) -> str:
        return self.facts.normalized

    def rank_key(self) -> tuple[float, str]:
        """Best first: higher score, then the stable id."""
        return (-self.score, self.candidate.evidence_id)


_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "their",
        "there",
        "these",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
    ]
)


@lru_cache(maxsize=4096)
def question_terms(question: str) -> frozenset[str]:
    """The question's content words (normalized, three letters or more, no stopwords).

    Evidence that brings terms no packed block has yet is worth more: it is
    likely about another part of the question.
    """
    words = (w.strip(".,;:!?\"'()[]{}") for w in normalize_text(question).split())
    return frozenset(w for w in words if len(w) >= 3 and w not in _STOPWORDS)
