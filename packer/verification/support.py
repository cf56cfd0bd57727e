"""Whether the sources of a sentence (its cited blocks, or the packet, and the given text)
hold each fact it states (`packer.verification.figures`), or derive it by written-out
arithmetic (`packer.verification.arithmetic`).

A number that is part of a name ("Windows 10", "COVID-19") is a word of the name, not a
quantity: it passes when no source writes the same name with another number. A name read
from a capitalised word before the number must itself be written by a source: German
capitalises every noun ("die Zahl 7"), and English capitalises words that open a
sentence, so without that a changed figure after any capitalised word would pass.
Rejected: reading a name-number as a name wherever its word is capitalised (a changed
figure of German text passed every time: 0 of 26 caught on the template bench's wording).
"""

from packer.verification.claims import AnswerSentence
from packer.verification.figures import Fact, TextFigures


def supported(fact: Fact, sources: list[TextFigures]) -> bool:
    """A fact some source holds; a name-number (`Fact.name`) unless a source writes its name
    with another number ("Windows 11" against a block on "Windows 10"), or no source writes
    the capitalised word it is named by (`Fact.name_word`)."""
    if any(c.supports(fact) for c in sources):
        return True
    if not fact.name or any(c.names(fact) for c in sources):
        return False
    return not fact.name_word or any(fact.name in c.words() for c in sources)


def unsupported_facts(
    sentence: AnswerSentence, sources: list[TextFigures]
) -> tuple[list[Fact], list[str]]:
    """The sentence's facts no source supports, and the arithmetic that derived the others."""
    missing = [f for f in sentence.facts if not supported(f, sources)]
    derived = []
    for d in sentence.derived:
        if d.result in missing and all(supported(f, sources) for f in d.operands):
            missing.remove(d.result)
            derived.append(d.shown)
    return missing, derived
