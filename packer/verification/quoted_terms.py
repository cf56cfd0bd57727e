"""A short quoted term ("the \"chicken or egg\" debate", "\"STANAGs\"") matched as words,
in any common inflection, rather than as a verbatim quotation: scare quotes mark a term,
not a quote (`packer.verification.claims` tells the two apart). A quotation matches as
people quote: up to case, punctuation, spacing, an ellipsis for words left out, and a
dropped article ("a", "an", "the"); its every other word, in order, must be the source's.

Rejected: a stemmer (a dependency for six endings, and its stems are not words a reader
can check in the evidence). Rejected for quotations: a word-level edit distance (one
changed word, a figure or a "not", would pass).
"""

import re

_INFLECTIONS = (("ies", "y"), ("es", ""), ("s", ""), ("ed", ""), ("d", ""), ("ing", ""))
"""Endings a word may carry or lack and still be the word ("STANAGs", "buses", "debated")."""


def word_forms(word: str) -> frozenset[str]:
    """A folded word, without its possessive, and the forms it has with its commonest
    inflection taken off or put on ("stanags": "stanag"; "bus": "buses"). A quoted term
    is in a text when a form of each of its words is one of the text's words."""
    word = word.casefold().removesuffix("'s").removesuffix("’s")
    forms = {word, word + "s", word + "es"}
    for ending, replacement in _INFLECTIONS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            forms.add(word[: -len(ending)] + replacement)
    return frozenset(forms)


def text_words(text: str) -> frozenset[str]:
    """A text's words, folded, without possessives."""
    return frozenset(
        w.removesuffix("'s").removesuffix("’s")
        for w in re.findall(r"\w+(?:['’]s)?", text.casefold())
    )


ARTICLES = frozenset({"a", "an", "the"})


def term_in(term: str, words: frozenset[str]) -> bool:
    """Whether each word of a quoted term but an article is one of `words` in some form."""
    return all(w in ARTICLES or not words.isdisjoint(word_forms(w)) for w in term.split())


_ELLIPSIS = re.compile(r"\.\s*\.\s*\.|…")
_PIECES = " … "


def prose_words(text: str) -> str:
    """A text's words, folded, articles left out, each padded by single spaces: what a
    quotation is looked up in, so case, punctuation, spacing and an article do not matter."""
    return " " + " ".join(w for w in re.findall(r"\w+", text.casefold()) if w not in ARTICLES) + " "


def quotation_key(phrase: str) -> str:
    """A quotation as it is looked up: the `prose_words` of each piece an ellipsis leaves."""
    pieces = (prose_words(piece).strip() for piece in _ELLIPSIS.split(phrase))
    return _PIECES.join(piece for piece in pieces if piece)


def quoted_in(key: str, prose: str) -> bool:
    """Whether a quotation's pieces (`quotation_key`) are runs of whole words of `prose`, in
    order: "the report said ... rents rose" is in "The report, which was late, said that
    rents rose"."""
    at = 0
    for piece in key.split(_PIECES):
        found = prose.find(f" {piece} ", at)
        if found < 0:
            return False
        at = found + len(piece) + 1
    return True
