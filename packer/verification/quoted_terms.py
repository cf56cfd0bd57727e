"""A short quoted term ("the \"chicken or egg\" debate", "\"STANAGs\"") matched as words,
in any common inflection, rather than as a verbatim quotation: scare quotes mark a term,
not a quote (`packer.verification.claims` tells the two apart).

Rejected: a stemmer (a dependency for six endings, and its stems are not words a reader
can check in the evidence).
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
