"""The packer's working record: a gated candidate with its derived facts computed once."""

import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from itertools import filterfalse

from packer.native import kernels
from schemas import Candidate

_WIRE_PREFIX = re.compile(
    r"^\s*(?:[Bb][Yy] [^\n—–]{1,60}?(?:\n|\s[—–-]+\s)\s*)?"  # a byline: "By Jane Doe —"
    r"(?:[A-Z][A-Z .,'/-]{1,40}?(?:,[^()\n—–]{1,20})?\s*(?=[(—–-]))?"  # a dateline: "LONDON, May 3"
    r"(?:\([^()\n]{1,30}\)\s*)?[—–-]+\s+(?=\S)"  # the agency, "(Reuters)", and its dash
)
"""A wire-service dateline or byline before the report itself: `(CNN) —`,
`WASHINGTON (Reuters) -`, `NEW YORK —`, `By Jane Doe — LONDON (AP) —`; only before a
report: a text that is nothing but one (`(0)- `) keeps its words, as it would without
its trailing space."""
_THOUSANDS = re.compile(r",(?<=\d,)(?=\d{3}(?!\d))")
_ACRONYM_DOT = re.compile(r"\.(?<=\b[^\W\d_]\.)(?=[^\W\d_]\b)")
"""Both open with their literal, and look behind it: `re` then skips to each comma or
period at C speed, where a look-behind first is tried at every position (ten times slower)."""
SYMBOLS = "%‰$€£¥₹₩₽¢₺₪₫₦₱₴₸₿¤<>=≤≥≠≈±~⁺⁻⁼₊₋₌"
"""Characters that carry meaning and are words of the canonical form: percent,
currencies, comparison operators, signs of exponents ("10⁻³")."""
_WORD = re.compile(rf"\d+(?:\.\d+)*|\w+|[{SYMBOLS}]|[-+](?<![\w.][-+])\d+(?:\.\d+)*")
"""A number, a word (superscripts are word characters: "km²", "10⁶" stay apart
from "km2", "106"), a meaning symbol, or a signed number ("-3.5", "+2": a sign
after a word or a digit is a hyphen or a range, "COVID-19", "2019-20"). The
signed number comes last, its sign before its look-behind: tried only at a sign."""
_SUPER_OR_SUB_RANGES = (
    (0xA0, 0x100), (0x2B0, 0x300), (0x10FC, 0x10FD), (0x1D2C, 0x1DC0), (0x2070, 0x20A0),
    (0x2120, 0x2123), (0x2C7C, 0x2C7E), (0x2D6F, 0x2D70), (0x3192, 0x31A0), (0xA69C, 0xA69E),
    (0xA770, 0xA771), (0xA7F2, 0xA7FA), (0xAB5C, 0xAB60), (0xAB69, 0xAB6A), (0x10780, 0x107BB),
    (0x1E030, 0x1E090), (0x1F16A, 0x1F16D),
)  # fmt: skip
"""Where Unicode has superscript and subscript compatibility characters (all of them:
a test scans every code point); scanning these at import takes microseconds."""
_PRIVATE = 0xF0000


def _runs(code_points: Iterable[int]) -> list[tuple[int, int]]:
    """Ascending code points as runs of consecutive ones, (first, last)."""
    runs: list[tuple[int, int]] = []
    for c in code_points:
        if runs and runs[-1][1] == c - 1:
            runs[-1] = (runs[-1][0], c)
        else:
            runs.append((c, c))
    return runs


_SUPER_OR_SUB = [
    chr(c)
    for start, end in _SUPER_OR_SUB_RANGES
    for c in range(start, end)
    if unicodedata.decomposition(chr(c)).startswith(("<super>", "<sub>"))
]
_PROTECT = {ord(c): _PRIVATE + i for i, c in enumerate(_SUPER_OR_SUB)}
_SUPER_OR_SUB_CHAR = re.compile(
    "[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in _runs(ord(c) for c in _SUPER_OR_SUB)) + "]"
)
"""One of them (a class of code point runs: a class of single characters is slower)."""
_RESTORE = {_PRIVATE + i: c for i, c in enumerate(_SUPER_OR_SUB)} | {0x2212: "-"}
"""NFKC leaves private-use characters alone: superscripts pass through it as those,
and come back after; the minus sign (U+2212), which NFKC keeps, becomes "-"."""


def _nfkc(text: str) -> str:
    """NFKC, except superscripts and subscripts; the minus sign as "-".

    A text NFKC leaves alone holds no superscript (NFKC would change it): most
    texts cost one quick check; the per-character translations, dearer than NFKC
    itself, run only on texts that hold a superscript or subscript.
    """
    if unicodedata.is_normalized("NFKC", text):
        return text.replace("\u2212", "-") if "\u2212" in text else text
    if _SUPER_OR_SUB_CHAR.search(text) is None:
        return unicodedata.normalize("NFKC", text).replace("\u2212", "-")
    return unicodedata.normalize("NFKC", text.translate(_PROTECT)).translate(_RESTORE)


def fold_case(text: str) -> str:
    """Unicode NFKC and case folding, except superscripts and subscripts.

    Compatibility folding removes typographic variants (full-width letters,
    ligatures, the no-break space), but it also turns "km²" into "km2" and
    "10⁶" into "106": a different fact, so those characters are kept.
    ASCII needs only lowercasing.
    """
    if text.isascii():
        return text.lower()
    return _nfkc(text).casefold()


def canonical_words(text: str, fold: bool = True) -> list[str]:
    """The words of a text's canonical form: what formatting variants of one report share.

    Only formatting goes: case and compatibility forms (`fold_case`), a
    leading wire dateline or byline, thousands separators and acronym dots
    ("4,000" = "4000", "U.S." = "US"), and punctuation. Everything that can
    change a fact stays a word: signs ("-5", "−5" and "+5" differ from "5"),
    currencies, percent and comparison operators (`SYMBOLS`), superscripts,
    units, scale, negation and modal words. `fold=False` keeps the case (to
    tell names from common words). Rejected: dropping every non-word
    character, which folded "-5" with "5" and "$5" with "€5" as one report.
    """
    return _scan(folded_form(text, fold))


def folded_form(text: str, fold: bool = True) -> str:
    """The text without a leading dateline or byline, folded (`fold_case`) or only
    compatibility-normalized (`fold=False`): what its canonical words are read from."""
    prefix = _WIRE_PREFIX.match(text)  # tried at the start only, where a dateline stands
    stripped = text[prefix.end() :] if prefix else text
    if fold:
        return fold_case(stripped)
    return stripped if stripped.isascii() else _nfkc(stripped)


def scan_words(folded: str) -> list[str]:
    """The canonical words of a folded text: thousands separators and acronym dots
    dropped, then its numbers, words, meaning symbols and signed numbers in order.

    `packer/_native.c` computes this, `text_words` and `word_count` in one pass
    over the characters, without a regex or a str per word (a test holds each pair
    equal over all of Unicode); these are the definitions, and the path taken where
    no C compiler was present at install. Rejected: a leaner regex (one `sub` over
    the gaps between words cost as much: `re` spends ~30 ns a character).
    """
    if "," in folded:
        folded = _THOUSANDS.sub("", folded)
    if "." in folded:
        folded = _ACRONYM_DOT.sub("", folded)
    return _WORD.findall(folded)


_scan = kernels.words if kernels else scan_words


def word_count(text: str) -> int:
    """Whitespace-separated words of `text` (`len(text.split())`, in C when built).

    Each costs at least one token: no tiktoken pre-token spans two words.
    """
    return kernels.split_count(text) if kernels else len(text.split())


def sha256_hex(text: str) -> str:
    """SHA-256 of the UTF-8 bytes: the provenance hash rule."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


OPENING_WORDS = 32
"""A text's opening words are its first this many canonical words: redundancy and
the search for reprints and conflicts look at them."""


@dataclass(frozen=True, slots=True)
class TextFacts:
    """What the packer derives from a text alone.

    `sha256` is None for a text that is not valid Unicode (a lone surrogate);
    `canonical` is its canonical form (its canonical words joined by spaces), the
    exact-duplicate key and what question terms and titles are matched in;
    `opening` holds its first `OPENING_WORDS` canonical words, each once (a
    tuple: half the memory of a set, and as fast to intersect with one), and
    `content` those of them that are not stopwords (what the reprint pair search
    compares: kept here, it is not rebuilt for every request the text is in);
    `negation` whether a canonical word is a polarity word (`NEGATORS`: a polarity
    pair starts only from such a text).
    """

    sha256: str | None
    canonical: str
    words: int
    opening: tuple[str, ...]
    content: tuple[str, ...]
    negation: bool
    _canonical_words: tuple[str, ...] | None = field(default=None, repr=False, compare=False)

    @property
    def canonical_words(self) -> tuple[str, ...]:
        """Every canonical word in order, made on first use and kept with the facts.

        Every stage that reads a text's words (dedup's marks, the reprint and slot
        searches, the polarity index) takes them from here, made once per text, instead
        of splitting the canonical form again in each request the text is in: a word set
        built from these words, whose hashes are computed once, costs a fifth of one
        built from a fresh split (1.3 against 7.4 µs for a paragraph). Made on first
        use: 44% of the speed bench's texts are ever read word by word, and the words
        of a paragraph cost 3 µs and 5 KB to make and keep. A word holds no space, so
        they are the canonical form split at its spaces. Rejected: interning the words
        (a word recurring across remembered texts would be one str, but the C pass took
        26 µs a paragraph instead of 12), and keeping each text's word set too (1 µs
        more saved a request, 2 KB more for each remembered text). Two threads reading
        them first at once each make them, and keep one: equal either way.
        """
        words = self._canonical_words
        if words is None:
            words = tuple(self.canonical.split(" ")) if self.canonical else ()
            object.__setattr__(self, "_canonical_words", words)
        return words


def text_facts(text: str) -> TextFacts:
    """The facts of `text`: a function of the text alone, so a worker's
    `PackerRuntime` memoizes it per distinct text."""
    try:
        digest: str | None = sha256_hex(text)
    except UnicodeEncodeError:
        digest = None
    canonical, opening, content, negation = _text_words(
        folded_form(text, True), OPENING_WORDS, STOPWORDS, NEGATORS
    )
    return TextFacts(digest, canonical, word_count(text), opening, content, negation)


def text_words(
    folded: str, limit: int, stopwords: frozenset[str], negators: frozenset[str]
) -> tuple[str, tuple[str, ...], tuple[str, ...], bool]:
    """What `TextFacts` holds of a folded text's words: its canonical form (the words
    one space apart), its first `limit` words each once and those of them not
    `stopwords` (`.opening`, `.content`), and whether a word is one of `negators`.
    `packer/_native.c` computes all of it in one pass over the words, without a str
    for any word past the first `limit` (5.4 µs a paragraph against 7.8 for a call per
    part, which made a str of every word and hashed each to look for a negator)."""
    words = scan_words(folded)
    opening = tuple(dict.fromkeys(words[:limit]))
    content = tuple(filterfalse(stopwords.__contains__, opening))
    return " ".join(words), opening, content, not negators.isdisjoint(words)


_text_words = kernels.text_words if kernels else text_words


def holds_polarity_word(folded: str) -> bool:
    """Whether a canonical word of a folded text is one of `NEGATORS` (in C, without a str
    for any word: `text_words` of no first words)."""
    return _text_words(folded, 0, _NO_WORDS, NEGATORS)[3]


_NO_WORDS: frozenset[str] = frozenset()


def contained(terms: frozenset[str], text: str) -> frozenset[str]:
    """The terms that occur in `text` as substrings (in C when built, `terms_in`: one pass
    for all, 2.0 -> 1.0 us a paragraph)."""
    found = [t for t in terms if t in text]
    return frozenset(found) if found else _NO_WORDS


class TermSearch:
    """`terms` made ready to be sought in many texts (`found_in`, what `contained` finds):
    in C when built (`_native.Terms`), where they are read once, not once a text."""

    def __init__(self, terms: frozenset[str]) -> None:
        self.terms = terms

    def found_in(self, text: str) -> frozenset[str]:
        return contained(self.terms, text)


terms_in = kernels.contained if kernels else contained
term_search: Callable[[frozenset[str]], TermSearch] = kernels.Terms if kernels else TermSearch


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
    unit: tuple[int, int] | None = None
    """Set when only a run of whole sentences is packed: its offsets in the record's text."""
    unit_span: tuple[int, int] | None = None
    """That run's offsets in the revision, when the record's span locates its text (a
    merged record's text is the union of its spans, not its candidate's text)."""

    @property
    def evidence_id(self) -> str:
        return self.candidate.evidence_id

    @property
    def canonical(self) -> str:
        return self.facts.canonical

    def rank_key(self) -> tuple[float, str]:
        """Best first: higher score, then the stable id."""
        return (-self.score, self.candidate.evidence_id)


def fold_copy(keeper: Evidence, other: Evidence) -> None:
    """Fold `other` into `keeper`: its id and its own copies join `derived_from`, its
    facets join the keeper's (the copy reaches the prompt through the keeper)."""
    keeper.derived_from.append(other.evidence_id)
    keeper.derived_from.extend(other.derived_from)
    keeper.facets = tuple(sorted(set(keeper.facets) | set(other.facets)))


STOPWORDS = frozenset(
    ("a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from",
     "had", "has", "have", "how", "in", "is", "it", "its", "of", "on", "or", "that", "the",
     "their", "there", "these", "this", "to", "was", "were", "what", "when", "where",
     "which", "who", "whom", "whose", "why", "will", "with")
)  # fmt: skip


_NOT_FACTS = STOPWORDS | frozenset(
    ["mr", "mrs", "ms", "dr", "prof", "sir", "but", "he", "she", "they", "we", "i", "if", "so"]
)
MONTHS = {
    "jan": "january", "feb": "february", "mar": "march", "apr": "april", "jun": "june",
    "jul": "july", "aug": "august", "sep": "september", "sept": "september", "oct": "october",
    "nov": "november", "dec": "december",
}  # fmt: skip


def fact_words(text: str) -> frozenset[str]:
    """The canonical words of `text` that state a fact: numbers, and capitalized words
    (names, places, months) that are not common words."""
    return frozenset(
        MONTHS.get(w, w)
        for w in (fold_case(o) for o in canonical_words_cased(text) if _looks_factual(o))
        if w not in _NOT_FACTS
    )


def _looks_factual(word: str) -> bool:
    """A capitalized word, a symbol, or a word with a digit in it (a word of letters
    only has none: read first, as most words are)."""
    return (
        word[0].isupper()
        or word[0] in SYMBOLS
        or (not word.isalpha() and any(map(str.isdigit, word)))
    )


MODALS = frozenset(
    ("must", "should", "may", "might", "shall", "can", "could", "will", "would", "cannot",
     "need", "ought", "required", "optional", "mandatory", "allowed", "prohibited")
)  # fmt: skip
NEGATIONS = frozenset(
    ("not", "no", "never", "none", "nor", "neither", "nobody", "nothing", "nowhere", "t",
     "without", "unless")
)  # fmt: skip
"""`t` is what is left of "n't" ("can't" is "can t")."""
NEGATORS = NEGATIONS - {"nor", "without", "unless"} | {"cannot"}
"""Words that flip a statement's polarity (`packer.statements`: "neither ... nor" is one)."""
MEANING_WORDS = MODALS | NEGATIONS
"""Words two copies of one report may never differ in: obligation, permission,
certainty and negation ("must" beside "may" is a contradiction, not a reprint)."""


def meaning_marks(words: Iterable[str]) -> list[str]:
    """The canonical words that carry a fact or a stance: numbers (signed), symbols,
    modal and negation words, in order. Two texts whose marks differ are never one report."""
    return [
        w for w in words if w in MEANING_WORDS or w[0] in SYMBOLS or any(c.isdigit() for c in w)
    ]


def canonical_words_cased(text: str) -> list[str]:
    """`canonical_words` before case folding (for telling names from common words)."""
    return canonical_words(text, fold=False)


def name_words(cased: list[str] | tuple[str, ...]) -> frozenset[str]:
    """The capitalized words of a text's cased canonical words, past the first."""
    return frozenset(w.lower() for w in cased[1:] if w[0].isupper())


def content_terms(words: Iterable[str]) -> frozenset[str]:
    """The content words among canonical `words`: three characters or more, no stopwords."""
    return frozenset(w for w in words if len(w) >= 3 and w not in STOPWORDS)
