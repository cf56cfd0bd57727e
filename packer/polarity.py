"""The `polarity` conflict rule: two documents making one statement with opposite polarity.

"X is definitely free of plastic" against "it is not guaranteed that X is
definitely free of plastic", "visitors must register" against "visitors must
not register": a sentence of one document and a sentence of another that
share the statement's content words (`statements.same_statement`) while one
is negated and the other not. The copy rule finds a stance changed only in
two copies of one report; this rule compares sentences, so a statement
contradicted inside an otherwise different passage is found too. Passages
taking opposite sides of a yes/no question's statement, whatever else they say,
are no conflict (`answers.opposite_sides`: both sides are an answer to cover).

Pair search: only negated statements can start a pair, and most passages have
none (15% of the speed bench's real paragraphs hold a negation word at all), so
a passage's statements are read only where they can matter: the negated ones of a
passage whose canonical words hold a negation word (`TextFacts.negation`, already
made; of its sentences only those holding one: `statements.negated_statements_of`),
and all of those of a passage of another document that can reach the bound a
negated statement sets (`_reachable`). A passage's words are a superset of its
sentences' (each sentence is read from a slice of the same text), so the pairs
are those of comparing every statement of every passage; a property test holds
them equal. The passages that can reach the bound are found from an index of
the request's passages by word, kept to the words of its negated statements:
a statement sharing the bound's number of words with a passage shares one of
them with its rarest words but the bound's less one, so only the passages on
those words' (short) posting lists are read, and the pair search grows with
the passages that share rare words with a negated statement, not with k·n for
k negated statements (which grow with n: 1, 5, 121, 328 at 10, 100, 1,000,
3,000 candidates of the speed bench). The index lists, for each sought word, the
passages whose canonical form holds it (`_postings`: scanned for a few, looked up
for many, in C); a list may also hold a passage where the word is only part of a
longer one, which only adds to the lists, and a passage on a list is then read by
its canonical words (`TextFacts.canonical_words`) before it counts: a request of tens of
candidates splits out the words of the few passages on its lists only. Rejected
before: a set of a passage's words made per request (6 µs a passage on the speed
bench's paragraphs, the tuple's reads 1-2), and a set kept with the text's facts
(3.4 KB a remembered text, half again its facts). Rejected: statements of every
passage first (a third of a cold request's packing time on the speed bench); an index
of every affirmative statement's words, rebuilt per request (twice the time at
50 candidates: it reads every passage's statements); and scanning every
passage for each negated statement (seconds a request at 3,000 candidates).
Measured on the perturbation set and the sets without conflicts (`python -m
benchmarks.meaning`; figures in docs/benchmarks.md). Rejected: a list of
antonyms (`safe`/`unsafe`, `allowed`/`banned`): each pair is a guess about
one domain, while negation words are the language's own polarity marks.
"""

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence

from packer.native import kernels
from packer.records import Evidence, term_search
from packer.runtime import Memos
from packer.statements import LARGER_SHARE, Statement, Statements, same_statement


def polarity_conflicts(records: Sequence[Evidence], memos: Memos) -> list[tuple[int, int]]:
    """Pairs (i < j) of records of different documents, not tagged with disjoint facets,
    where a statement of one is the negation of a statement of the other."""
    stated: dict[int, Statements] = {}

    def statements(k: int) -> Statements:
        if k not in stated:
            stated[k] = memos.statements(records[k].text)
        return stated[k]

    negatives = [
        (i, negative)
        for i, record in enumerate(records)
        if record.facts.negation
        for negative in memos.negated_statements(record.text)
    ]
    if not negatives:
        return []
    sought = frozenset().union(*(negative.content for _, negative in negatives))
    postings = _postings(sought, records)
    pairs: set[tuple[int, int]] = set()
    for i, negative in negatives:
        a = records[i]
        for j in _reachable(negative, postings, records, a.document_id):
            b = records[j]
            if (
                (min(i, j), max(i, j)) in pairs
                or len(negative.content & statements(j).words) < 3
                or facets_apart(a, b)
            ):
                continue
            if any(not s.negated and same_statement(negative, s) for s in statements(j).all):
                pairs.add((min(i, j), max(i, j)))
    return sorted(pairs)


SCANNED_WORDS = 64
"""The most sought words the passages are scanned for (`_postings`); more are looked up."""


def _postings(sought: frozenset[str], records: Sequence[Evidence]) -> Mapping[str, list[int]]:
    """For each sought word, the records whose canonical form holds it: at least those
    among whose words it is, where the lists need no more (see the module's docstring).
    A few words (a request of tens of candidates: 16 at 10 on the speed bench) are found
    by scanning each canonical form for all of them at once (`records.term_search`, one
    pass in C, no word split out or hashed: 2 µs a cold passage less), which may also
    find one inside a longer word; many (80 at 100 candidates, 700 at 1,000) are looked
    up word by word (`word_postings`), as the scan's cost grows with them (45 µs a
    passage at 3,000). Rejected: looking the words up in the canonical forms in place,
    hashing each word's characters in C (no faster at 3,000 candidates: the passages
    then reached, 55% of them, split out their words anyway)."""
    if len(sought) > SCANNED_WORDS:
        return _word_postings(sought, [r.facts.canonical_words for r in records])
    search = term_search(sought)
    postings: dict[str, list[int]] = defaultdict(list)
    for j, record in enumerate(records):
        for word in search.found_in(record.canonical):
            postings[word].append(j)
    return postings


def word_postings(sought: frozenset[str], texts: list[tuple[str, ...]]) -> dict[str, list[int]]:
    """For each sought word some text holds, the indexes of the `texts` (words each)
    holding it, ascending."""
    postings: dict[str, list[int]] = defaultdict(list)
    for j, words in enumerate(texts):
        for word in sought.intersection(words):
            postings[word].append(j)
    return dict(postings)


_word_postings = kernels.word_postings if kernels else word_postings


def facets_apart(a: Evidence, b: Evidence) -> bool:
    """Whether two records are tagged with facets and share none (another subject): no
    pair rule (polarity, amount, slot, copy) pairs them."""
    return bool(a.facets and b.facets and set(a.facets).isdisjoint(b.facets))


_NONE: list[int] = []
"""The records holding a word no record holds (never changed)."""


def _reachable(
    negative: Statement,
    postings: Mapping[str, list[int]],
    records: Sequence[Evidence],
    document: str,
) -> list[int]:
    """The passages of other documents than the statement's `document` whose words hold
    as many of the statement's content words as a statement saying the same needs
    (`same_statement`: three, and `LARGER_SHARE` of the larger statement, at least this
    one); the statement's own passage, which always holds them, is not read. Only the
    posting lists of the statement's rarest words but `bound - 1` are read: a passage
    holding `bound` of its words holds one of those, whatever else the lists hold (a
    passage listed for a word inside a longer one is counted by its words like any).
    Rejected: counting, for lists made word by word, on how many of all the statement's
    lists a passage is (no faster at 3,000 candidates: common words' lists are long)."""
    content = negative.content
    bound = max(3, math.ceil(LARGER_SHARE * len(content)))
    if len(content) < bound:
        return []
    lists = (postings.get(w, _NONE) for w in content)
    rarest = sorted(lists, key=len)[: len(content) - bound + 1]
    seen = set().union(*rarest)
    return [
        j
        for j in seen
        if records[j].document_id != document
        and len(content.intersection(records[j].facts.canonical_words)) >= bound
    ]
