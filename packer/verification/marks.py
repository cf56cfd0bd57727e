"""Numbers in an answer that mark something rather than state a figure: list items, section
signs, and references to a source in prose.

Models cite in prose as often as in brackets: "According to 1, ...", "in contexts 1 and
2", "source 2 says", "(see 3)". Such a number names a retrieved text, not a quantity, and
no source holds it, so it is read as a citation mark. Only a number of one or two digits,
after a word that names retrieved text ("context", "source", "document", "passage",
"reference", "snippet", "excerpt", "search result") or after "according to" / "see" with
nothing but punctuation after it: "according to 2019 data", "source of 40% of sales" and
"Rule 19" stay figures.

Rejected: reading every small number after "according to" as a mark ("according to 12
experts" states a count); a mark only when it is no higher than the packet's block count
(the packet's numbering is its labels, `E1`..., which prose marks do not follow).
"""

import re

_ITEM_START = re.compile(r"\s*\(?\d{1,2}\s*[.):](?!\d)")
_ITEM_INLINE = re.compile(r"\(\d{1,2}\)|§+\s*\d+(?:\.\d+)*")
"""Item numbers of a list ("1.", "2)", "(3)", "1 ." once a citation is stripped from
"1[E2].") and section signs ("§ 230"): markers, not figures."""
_MARKS = r"\d{1,2}(?:\s*(?:,|&|and|or)\s*\d{1,2})*(?![\d.,]?\d)"
_SOURCE_MENTION = re.compile(
    r"(?i:\b(?:contexts?|sources?|documents?|docs?|passages?|references?|refs?\.|snippets?"
    rf"|excerpts?|search\s+results?)\s+{_MARKS}(?!\s*(?:%|percent\b))"
    rf"|\b(?:according\s+to|see)\s+{_MARKS}(?=\s*(?:[,;:.)\]]|$)))"
)
"""A reference to a source in prose (see the module docstring)."""


def markers(text: str) -> list[tuple[int, int]]:
    """The spans of list-item numbers, section signs and sources named in prose."""
    spans = [m.span() for m in [_ITEM_START.match(text)] if m]
    if "(" in text or "§" in text:
        spans += [m.span() for m in _ITEM_INLINE.finditer(text)]
    if any(c.isdigit() for c in text):
        spans += [m.span() for m in _SOURCE_MENTION.finditer(text)]
    return spans
