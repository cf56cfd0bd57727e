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
memoized per text). Each negated statement is compared with the affirmative
statements of other documents that passed a word-index filter. Measured on
the perturbation set and the sets without conflicts (`python -m
benchmarks.meaning`; figures in docs/benchmarks.md). Rejected: a list of
antonyms (`safe`/`unsafe`, `allowed`/`banned`): each pair is a guess about
one domain, while negation words are the language's own polarity marks.
"""

from collections import defaultdict
from collections.abc import Sequence

from packer.records import Evidence
from packer.runtime import Memos
from packer.statements import Statement, same_statement


def polarity_conflicts(records: Sequence[Evidence], memos: Memos) -> list[tuple[int, int]]:
    """Pairs (i < j) of records of different documents, not tagged with disjoint facets,
    where a statement of one is the negation of a statement of the other."""
    stated = [memos.statements(r.text) for r in records]
    negated = [(i, s) for i, ss in enumerate(stated) for s in ss if s.negated]
    if not negated:
        return []
    index: dict[str, list[tuple[int, Statement]]] = defaultdict(list)
    for i, statements in enumerate(stated):
        for s in statements:
            if not s.negated:
                for word in s.content:
                    index[word].append((i, s))
    pairs: set[tuple[int, int]] = set()
    for i, negative in negated:
        seen: dict[int, int] = {}
        candidates: dict[int, tuple[int, Statement]] = {}
        for word in negative.content:
            for j, s in index.get(word, ()):
                key = id(s)
                seen[key] = seen.get(key, 0) + 1
                candidates[key] = (j, s)
        for key, count in seen.items():
            j, affirmative = candidates[key]
            if count < 3 or (min(i, j), max(i, j)) in pairs:
                continue
            a, b = records[i], records[j]
            if a.document_id == b.document_id:
                continue
            if a.facets and b.facets and set(a.facets).isdisjoint(b.facets):
                continue
            if same_statement(negative, affirmative):
                pairs.add((min(i, j), max(i, j)))
    return sorted(pairs)
