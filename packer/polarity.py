"""The `polarity` conflict rule: two documents making one statement with opposite polarity.

"X is definitely free of plastic" against "it is not guaranteed that X is
definitely free of plastic", "visitors must register" against "visitors must
not register": a sentence of one document and a sentence of another that
share the statement's content words (`statements.same_statement`) while one
is negated and the other not. The copy rule finds a stance changed only in
two copies of one report; this rule compares sentences, so a statement
contradicted inside an otherwise different passage is found too.

Pair search: only negated statements can start a pair, and most passages have
none (15% of the speed bench's real paragraphs hold a negation word at all), so
a passage's statements are read only where they can matter: those of a passage
whose canonical words (`TextFacts.canonical`, already made) hold a negation
word, and those of a passage of another document that holds three of a negated
statement's content words. A passage's words are a superset of its sentences'
(each sentence is read from a slice of the same text), so the pairs are those
of comparing every statement of every passage; a property test holds them
equal. A negated statement is compared sentence by sentence only with the
passages that pass: O(k·n) set intersections for k negated statements.
Rejected: statements of every passage first (a third of a cold request's
packing time on the speed bench), and an index of every affirmative
statement's words, rebuilt per request (twice the time at 50 candidates). Measured on
the perturbation set and the sets without conflicts (`python -m
benchmarks.meaning`; figures in docs/benchmarks.md). Rejected: a list of
antonyms (`safe`/`unsafe`, `allowed`/`banned`): each pair is a guess about
one domain, while negation words are the language's own polarity marks.
"""

from collections.abc import Sequence

from packer.records import Evidence
from packer.runtime import Memos
from packer.statements import NEGATORS, Statements, same_statement


def polarity_conflicts(records: Sequence[Evidence], memos: Memos) -> list[tuple[int, int]]:
    """Pairs (i < j) of records of different documents, not tagged with disjoint facets,
    where a statement of one is the negation of a statement of the other."""
    words = [frozenset(r.facts.canonical.split()) for r in records]
    stated: dict[int, Statements] = {}

    def statements(k: int) -> Statements:
        if k not in stated:
            stated[k] = memos.statements(records[k].text)
        return stated[k]

    pairs: set[tuple[int, int]] = set()
    for i in (k for k, held in enumerate(words) if not NEGATORS.isdisjoint(held)):
        for negative in statements(i).negated:
            for j, b in enumerate(records):
                a = records[i]
                if (
                    a.document_id == b.document_id
                    or (min(i, j), max(i, j)) in pairs
                    or len(negative.content & words[j]) < 3
                    or len(negative.content & statements(j).words) < 3
                    or (a.facets and b.facets and set(a.facets).isdisjoint(b.facets))
                ):
                    continue
                if any(not s.negated and same_statement(negative, s) for s in statements(j).all):
                    pairs.add((min(i, j), max(i, j)))
    return sorted(pairs)
