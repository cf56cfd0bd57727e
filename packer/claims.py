"""What an answer claims: its sentences, their citations, and the figures, dates and quotes
they state, normalized so that equal values compare equal whatever their spelling.

Numbers: digit groups and trailing decimal zeros do not matter ("4,000" = "4000",
"2.50" = "2.5"); a scale word multiplies ("4 million" = "4,000,000"). Dates:
"August 8, 2014", "8 August 2014", "Aug. 8, 2014" and "2014-08-08" are one
date; "August 2014" is a month and "August 8" a day of the year, each found in
any fuller date of the same month or day. Quoted phrases ("..." or “...”)
compare case-folded, with quotes, dashes and spacing unified. Spelled-out
numbers ("four") are not figures here: a deterministic check cannot tell them
from prose, so they are left to entailment checks.

Rejected: matching figures as substrings of the cited text ("40" would be
found in "1400"), and parsing numbers with locale rules (the evidence is
English prose whatever its locale).
"""

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        [
            ("January", "Jan"),
            ("February", "Feb"),
            ("March", "Mar"),
            ("April", "Apr"),
            ("May",),
            ("June", "Jun"),
            ("July", "Jul"),
            ("August", "Aug"),
            ("September", "Sep", "Sept"),
            ("October", "Oct"),
            ("November", "Nov"),
            ("December", "Dec"),
        ]
    )
    for name in names
}
_MONTH = "(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"\d{4}"
_DATE = re.compile(
    rf"\b(?P<iso>(?P<iy>\d{{4}})-(?P<im>0[1-9]|1[0-2])-(?P<id>0[1-9]|[12]\d|3[01]))\b"
    rf"|\b(?P<m1>{_MONTH})\s+(?P<d1>{_DAY})(?:,?\s+(?P<y1>{_YEAR}))?(?![\d:])"
    rf"|\b(?P<d2>{_DAY})\s+(?P<m2>{_MONTH}),?(?:\s+(?P<y2>{_YEAR}))?(?!\d)"
    rf"|\b(?P<m3>{_MONTH}),?\s+(?P<y3>{_YEAR})\b"
)
_NUMBER = re.compile(
    r"(?<![\w.,])(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<frac>\d+))?"
    r"(?:\s*(?P<scale>thousand|million|billion|trillion)\b)?",
    re.IGNORECASE,
)
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_QUOTE = re.compile(r"\"([^\"\n]{2,300})\"|“([^”\n]{2,300})”")
_CITATION = re.compile(r"\[([^\[\]\n]{1,200})\]|\(((?:\s*E\d+\s*[,;]?)+)\)")
_LABEL_ITEM = re.compile(r"E\d+")
_RANGE = re.compile(r"E(\d+)\s*[-–]\s*E(\d+)")
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"”’)\]]))\s+|\n\s*\n|\n(?=\s*[-*•\d])")
_TRAILING_CITATIONS = re.compile(r"([.!?])((?:\s*\[E\d+(?:\s*[,;–-]\s*E\d+)*\])+)")
_ABBREVIATION = re.compile(
    r"(?:^|[\s(])(?:[A-Z]|[A-Z]\.[A-Z]|St|Mr|Mrs|Ms|Dr|Prof|Jr|Sr|No|vs|Inc|Ltd|Co"
    r"|Corp|Gen|Gov|Sen|Rep|Rev|Mt|Ft|approx|etc|e\.g|i\.e)\.$"
)
"""A piece ending so ("J.", "U.S.", "Dr.", "No.") does not end its sentence."""
_SPACES = re.compile(r"\s+")
_UNIFY = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'", "–": "-", "—": "-"})


def normalize_phrase(text: str) -> str:
    """Case-folded text with quotes, dashes and runs of whitespace unified."""
    return _SPACES.sub(" ", text.translate(_UNIFY)).strip().casefold()


def number_value(integer: str, fraction: str | None, scale: str | None) -> str:
    """A number's canonical spelling: no digit groups, no trailing zeros, scale applied."""
    try:
        value = Decimal(integer.replace(",", "") + ("." + fraction if fraction else ""))
    except InvalidOperation:
        return integer
    if scale:
        value *= _SCALES[scale.lower()]
    text = format(value.normalize(), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _date_keys(match: re.Match[str]) -> tuple[str, ...]:
    """The date's canonical keys, most specific first: YYYY-MM-DD, YYYY-MM, MM-DD."""
    g = match.groupdict()
    if g["iso"]:
        year, month, day = g["iy"], int(g["im"]), int(g["id"])
    else:
        month_name = g["m1"] or g["m2"] or g["m3"]
        month = _MONTHS[month_name.rstrip(".")]
        day_text = g["d1"] or g["d2"]
        day = int(re.sub(r"\D", "", day_text)) if day_text else 0
        year = g["y1"] or g["y2"] or g["y3"] or ""
    keys = []
    if year and day:
        keys.append(f"{year}-{month:02d}-{day:02d}")
    if year:
        keys.append(f"{year}-{month:02d}")
    if day:
        keys.append(f"--{month:02d}-{day:02d}")
    return tuple(keys)


@dataclass(frozen=True)
class Fact:
    """One checkable statement of a sentence: a figure, a date or a quoted phrase."""

    kind: str  # "number", "date" or "quote"
    text: str  # as written in the answer
    key: str  # canonical form, compared with the cited text's


@dataclass(frozen=True)
class TextFacts:
    """The figures, dates and phrase text of one evidence block, ready for lookups."""

    numbers: frozenset[str]
    dates: frozenset[str]
    phrase_text: str

    def supports(self, fact: Fact) -> bool:
        if fact.kind == "number":
            return fact.key in self.numbers
        if fact.kind == "date":
            return fact.key in self.dates
        return fact.key in self.phrase_text


def text_facts(text: str) -> TextFacts:
    """Every figure (also those inside dates, and unscaled too) and date of a text."""
    numbers: set[str] = set()
    for m in _NUMBER.finditer(text):
        numbers.add(number_value(m["int"], m["frac"], None))
        if m["scale"]:
            numbers.add(number_value(m["int"], m["frac"], m["scale"]))
    dates = {key for m in _DATE.finditer(text) for key in _date_keys(m)}
    return TextFacts(frozenset(numbers), frozenset(dates), normalize_phrase(text))


@dataclass(frozen=True)
class Sentence:
    """One sentence of an answer, its citations and its checkable facts."""

    text: str
    labels: tuple[str, ...]
    """Every label it cites, as written (E-labels and bare numbers)."""
    facts: tuple[Fact, ...]


def cited_labels(text: str) -> tuple[str, ...]:
    """Labels cited as `[E1]`, `[E1, E3]`, `[E1-E3]` or `(E2)`.

    A bracket holding anything but labels is not a citation: "[sic]", and
    footnote marks such as "[9]" that answers copy from their sources.
    """
    labels: list[str] = []
    for m in _CITATION.finditer(text):
        inner = m[1] if m[1] is not None else m[2]
        expanded = _RANGE.sub(
            lambda r: (
                ",".join(f"E{i}" for i in range(int(r[1]), int(r[2]) + 1))
                if 0 < int(r[2]) - int(r[1]) < 100
                else r[0]
            ),
            inner,
        )
        items = [item for item in re.split(r"[\s,;]+", expanded) if item and item != "and"]
        if items and all(_LABEL_ITEM.fullmatch(item) for item in items):
            labels.extend(items)
    return tuple(labels)


def _strip_citations(text: str) -> str:
    return _CITATION.sub(" ", text)


def sentence_facts(text: str) -> tuple[Fact, ...]:
    """The figures, dates and quoted phrases a sentence states (citations removed)."""
    plain = _strip_citations(text)
    facts: list[Fact] = []
    for m in _QUOTE.finditer(plain):
        phrase = normalize_phrase(m[1] or m[2]).strip(" .,;:!?'\"")
        if phrase:
            facts.append(Fact("quote", m[0], phrase))
    spans = []
    for m in _DATE.finditer(plain):
        keys = _date_keys(m)
        if keys:
            facts.append(Fact("date", m[0], keys[0]))
            spans.append(m.span())
    rest = plain
    for start, end in reversed(spans):
        rest = rest[:start] + " " * (end - start) + rest[end:]
    for m in _NUMBER.finditer(rest):
        facts.append(Fact("number", m[0], number_value(m["int"], m["frac"], m["scale"])))
    return tuple(facts)


def split_sentences(answer: str) -> list[str]:
    """The answer's sentences.

    A sentence ends at `.`, `!` or `?` (and closing quotes or brackets) before
    whitespace, at a blank line or before a list item; a piece that starts in
    lower case ("e.g. this"), or follows an initial or a common abbreviation
    ("Joseph A. Conry", "Dr. Li"), continues the sentence. A run of citations
    after a full stop belongs to the sentence before it.
    """
    moved = _TRAILING_CITATIONS.sub(r"\2\1", answer)  # "x. [E1]" cites for x: "x [E1]."
    pieces = [p.strip() for p in _SENTENCE_END.split(moved) if p and p.strip()]
    sentences: list[str] = []
    for piece in pieces:
        continues = piece[0].islower() or not _strip_citations(piece).strip(" .;,")
        if sentences and (continues or _ABBREVIATION.search(sentences[-1])):
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    return sentences


def parse_answer(answer: str) -> list[Sentence]:
    """Every sentence of an answer with its citations and facts."""
    return [Sentence(s, cited_labels(s), sentence_facts(s)) for s in split_sentences(answer)]
