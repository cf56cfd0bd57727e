"""The `polarity` conflict rule: two documents making one statement with opposite polarity.

"X is definitely free of plastic" against "it is not guaranteed that X is
definitely free of plastic", "visitors must register" against "visitors must
not register": a sentence of one document and a sentence of another that
share the statement's content words (`statements.same_statement`) while one
is negated and the other not. The copy rule finds a stance changed only in
two copies of one report; this rule compares sentences, so a statement
contradicted inside an otherwise different passage is found too.

Pair search: only negated statements can start a pair, and most passages have
none, so a request without one costs a look-up per passage (statements are
memoized per text, with the union of their content words). A negated
statement is compared sentence by sentence only with the passages of other
documents that hold three of its content words somewhere: O(k·n) set
intersections for k negated statements. Rejected: an index of every
affirmative statement's words, rebuilt per request (twice the time at 50
candidates). Measured on
the perturbation set and the sets without conflicts (`python -m
benchmarks.meaning`; figures in docs/benchmarks.md). Rejected: a list of
antonyms (`safe`/`unsafe`, `allowed`/`banned`): each pair is a guess about
one domain, while negation words are the language's own polarity marks.
"""

from collections.abc import Sequence

from packer.records import Evidence
from packer.runtime import Memos
from packer.statements import same_statement


def polarity_conflicts(records: Sequence[Evidence], memos: Memos) -> list[tuple[int, int]]:
    """Pairs (i < j) of records of different documents, not tagged with disjoint facets,
    where a statement of one is the negation of a statement of the other."""
    stated = [memos.statements(r.text) for r in records]
    pairs: set[tuple[int, int]] = set()
    for i, mine in enumerate(stated):
        for negative in mine.negated:
            for j, theirs in enumerate(stated):
                a, b = records[i], records[j]
                if (
                    a.document_id == b.document_id
                    or (min(i, j), max(i, j)) in pairs
                    or len(negative.content & theirs.words) < 3
                    or (a.facets and b.facets and set(a.facets).isdisjoint(b.facets))
                ):
                    continue
                if any(not s.negated and same_statement(negative, s) for s in theirs.all):
                    pairs.add((min(i, j), max(i, j)))
    return sorted(pairs)
