"""An answer's sentences and the evidence labels each cites.

This splitter reads answers only; evidence is cut into units by
`packer.units`, whose rules are part of the packing output, so neither can
change the other. Rejected: one splitter for both (a fix for how models
write answers would change packed prompts).
"""

import re
from collections.abc import Iterator

from packer.verification.written_dates import MONTH

_CITATION = re.compile(r"\[([^\[\]\n]{1,200})\]|\(((?:\s*E\d+\s*(?:[,;–-]|and)?)+)\)")
_LABEL_ITEM = re.compile(r"E\d+")
_RANGE = re.compile(r"E(\d+)\s*[-–—]\s*E?(\d+)")
MAX_RANGE = 50
"""A range of more labels than this (`[E1-E400]`) is kept whole as one label, which no
label map holds: it fails `labels_exist` instead of expanding into hundreds of rows."""
_BREAK = re.compile(
    r"[.!?][\"”’)\]]?(?P<gap>\s+)|[。！？][」』”）)]?(?P<cjk>\s*)"
    r"|(?P<line>\n\s*\n|\n(?=\s*[-*•\d]))"
)
"""Where a piece ends: the whitespace after `.`, `!` or `?` (and a closing quote or bracket),
after a CJK full stop, a blank line, or the line break before a list item. The pattern
starts with a character class so the scan skips ahead; rejected: lookbehinds at every
position, three times slower."""
_TRAILING_CITATIONS = re.compile(
    r"([.!?。！？][\"”’)]?)((?:\s*\[E\d+(?:\s*[,;–-]\s*E\d+)*\])+)"
    r"(?!\s*(?:\[E\d|[.!?。！？]))"
)
"""Citations after a sentence's full stop (and a closing quote or bracket), unless a full
stop of their own follows them ('x..." [E1].' already ends after the citation)."""
_ABBREVIATION = re.compile(
    r"[(\[\"“'‘]?(?:[A-Z]|(?:[A-Za-z]\.)+[A-Za-z]|St|Mr|Mrs|Ms|Dr|Prof|Jr|Sr|Nos?|vs"
    r"|Inc|Ltd|Co|Corp|Bros|Gen|Gov|Sen|Rep|Rev|Hon|Pres|Lt|Col|Sgt|Capt|Cmdr|Adm|Mt|Ft|Ave"
    r"|Blvd|Dept|Univ|Vol|Fig|pp|cf|al|ca|approx|est|etc|viz|Rs|Jan|Feb|Mar|Apr|Jun|Jul|Aug"
    r"|Sep|Sept|Oct|Nov|Dec)\."
)
"""A piece whose last word is so ("J.", "U.S.", "e.g.", "p.m.", "Dr.", "No.", "Dec.",
"Rs.", also after an opening quote or bracket) does not end its sentence."""
_ORDINAL_END = re.compile(r"(?:^|[^\d.])\d{1,2}\.$")
_MONTH_START = re.compile(rf"{MONTH}(?![A-Za-z])")
"""A German ordinal day ("am 7. September") does not end its sentence before a month."""


def _expand(match: re.Match[str]) -> str:
    """`E2-E4` -> `E2,E3,E4`; a reversed or overlong range stays one (unknown) label."""
    first, last = int(match[1]), int(match[2])
    if first <= last and last - first < MAX_RANGE:
        return ",".join(f"E{i}" for i in range(first, last + 1))
    return f"E{first}-E{last}"


_RANGE_LABEL = re.compile(r"E\d+-E\d+")


def cited_labels(text: str) -> tuple[str, ...]:
    """Labels cited as `[E1]`, `[E1, E3]`, `[E1; E3]`, `[E1 and E3]`, `[E1-E3]` or `(E2)`.

    A bracket holding anything but labels is not a citation: "[sic]", and
    footnote marks such as "[9]" that answers copy from their sources; nor
    is a bare `E2`, a lower-case `[e2]` or `[Source 2]`. A range is each of
    its labels; a reversed one (`[E9-E2]`) or one over more than
    `MAX_RANGE` labels stays whole, a label no map holds.
    """
    labels: list[str] = []
    for m in _CITATION.finditer(text):
        inner = m[1] if m[1] is not None else m[2]
        expanded = _RANGE.sub(_expand, inner)
        items = [item for item in re.split(r"[\s,;]+", expanded) if item and item != "and"]
        if items and all(_LABEL_ITEM.fullmatch(i) or _RANGE_LABEL.fullmatch(i) for i in items):
            labels.extend(items)
    return tuple(labels)


_MARK = re.compile(r"\s*(?:[^\W\d_]+\.?\s*)?\d+(?:\s*(?:[,;–-]|and)\s*(?:[^\W\d_]+\.?\s*)?\d+)*\s*")
"""What a bracket holds when it marks a source rather than says something: a label, a
footnote number, "Source 2", and lists and ranges of them ("E1-E3", "1, 4")."""


def _mark(match: re.Match[str]) -> str:
    """A citation or a source mark blanked; any other bracket kept as the sentence's text."""
    return " " if match[1] is None or _MARK.fullmatch(match[1]) else match[0]


def strip_citations(text: str) -> str:
    """`text` without its citations and source marks (`_MARK`). Brackets that say something
    stay: "[Accessed: 22-Oct-2021]" states a date, "[Online]" a word. Rejected: blanking every
    bracket (a date or figure in brackets was then never checked)."""
    return _CITATION.sub(_mark, text) if "[" in text or "(" in text else text


def _continues(previous: str, piece: str) -> bool:
    """Whether `piece` goes on the sentence `previous` (the split before it was no end).

    Only the last word of `previous` is matched: a search anchored at its end
    would scan the whole sentence at each split (most of the checks' time).
    """
    last = previous.rsplit(None, 1)[-1]
    return (
        piece[0].islower()
        or not _CITATION.sub(" ", piece).strip(" .;,")  # brackets alone: "[1].", "[edit]"
        or bool(_ABBREVIATION.fullmatch(last))
        or bool(_ORDINAL_END.search(last) and _MONTH_START.match(piece))
    )


def _pieces(text: str) -> Iterator[str]:
    start = 0
    for m in _BREAK.finditer(text):
        name = m.lastgroup or "gap"
        yield text[start : m.start(name)]
        start = m.end(name)
    yield text[start:]


def split_sentences(answer: str) -> list[str]:
    """The answer's sentences.

    A sentence ends at `.`, `!` or `?` (and closing quotes or brackets) before
    whitespace, at a CJK full stop `。`, `！` or `？`, at a blank line or before
    a list item; a piece that starts in
    lower case ("e.g. this"), or follows an initial, a common abbreviation
    ("Joseph A. Conry", "Dr. Li", "U.S. troops", "Dec. 12") or a German
    ordinal day before a month ("7. September"), continues the sentence. A
    run of citations after a full stop belongs to the sentence before it.
    This splitter reads answers only; evidence is cut into units by
    `packer.units`, whose rules are part of the packing output.
    """
    moved = _TRAILING_CITATIONS.sub(r"\2\1", answer)  # 'x." [E1]' cites for x: 'x [E1]."'
    pieces = [p.strip() for p in _pieces(moved) if p.strip()]
    sentences: list[str] = []
    for piece in pieces:
        if sentences and _continues(sentences[-1], piece):
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    return sentences
