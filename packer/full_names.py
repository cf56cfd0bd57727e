"""The name a packet gives only in short form, and the passages that give it in full.

A news fact cut from the middle of an article names a person the way the article
does after its first mention, by surname ("Bankman-Fried said ..."); the full
name ("Sam Bankman-Fried") is in the passage that introduces them. Asked "Who is
the individual ...?", a model shown only the short form has half the answer, and
a passage holding the answer is what a news QA set scores. So for a question
asking who (`first.name_in_full`), the name two or more packed passages mention
most, none of its words the question's, is sought in full: a run of capitalized
words ending with it and one word longer, the form most candidates carry, not
opening the text (where the capital may be the sentence's: "Unlike FTX" is no
longer form of "FTX"). Names are read from a text's canonical words as one run
(`Memos.names`). When no packed passage gives that form, its carriers are an
answer to cover (`first.answers_first`: selection runs again with the cheapest
of them first).

Measured on the full visible sets at 150/256/512/1024/2048 against the rule off
(`make eval`, ablation `no-full-names`): a passage holding the answer packed whole
(`benchmarks.quality`, `answer_passage`: MultiHop-RAG's inference queries, whose
answer is a name) on `multihop_rag-50` 75.5/92.1 -> 88.5/96.4 at 150/256 (gap to the
oracle that packs those passages first closed 0.23/0.68 -> 0.64/0.85), MultiHop-RAG
92.9 -> 94.7 at 150; the primary metrics: every evidence fact of `multihop_rag-50`
-0.6/-0.7 at 150/256 (the full name takes a fact's room), MultiHop-RAG -0.2 at 150,
HotpotQA -0.2 at 256 and 512, hotpotqa-notitle -0.2 at 512, ConflictNQ -0.2 at 256,
RAMDocs -0.2 at 150 (one question each), every other cell unchanged. On the speed
bench (17% of its questions ask who) it costs about 3 us a candidate cold (4%), 1.3
warm (3%), most of it reading names (`Memos.names`, in C). Rejected: a name one
packed passage mentions (answer passage 91.4/97.1 at 150/256, but RAMDocs and
ConflictNQ -0.4 at 256); "where" questions as well (89.2/97.1, the same other
cells, a fifth more requests read); names read sentence by sentence from the
typed claims (the same MultiHop-RAG cells, 7.1 against 5.6 us a candidate cold in
Python); the first of several equally mentioned names alone ("FTX" beside
"Bankman-Fried", both in three passages: the longer form of each is sought, the
most carried kept); the carrier best by utility per token instead of the
cheapest (the same cells); a carrier admitted only in the room the fill left (the
fill leaves none for a whole passage: no cell moved).
"""

from collections import Counter
from collections.abc import Sequence

from packer.answers import Answer
from packer.records import Evidence
from packer.runtime import Memos

SCANNED = 64
"""The best-ranked candidates holding the short form whose names are read for its longer
forms: bounds the work on thousands of candidates (a text's names cost about 30 us cold)."""

Name = tuple[str, ...]
"""A name as its folded words ("sam", "bankman", "fried")."""


def names_in(text: str, asked: frozenset[str], memos: Memos, inner: bool = False) -> set[Name]:
    """The names a text holds that share no word with the question (`asked`); with
    `inner`, only those not opening the text."""
    return {
        words
        for words, at in memos.names(text)
        if asked.isdisjoint(words) and not (inner and at == 0)
    }


def _ends_with(name: Name, tail: Name) -> bool:
    return len(name) >= len(tail) and name[len(name) - len(tail) :] == tail


def shortened_name(
    records: Sequence[Evidence], shown: Sequence[str], asked: frozenset[str], memos: Memos
) -> Answer | None:
    """The full form of the name the `shown` texts (what the packet shows of its records)
    mention most, with the records carrying it in rank order, when no shown text gives
    it; None otherwise (no name shown twice, none longer among the candidates, or
    already given in full). A candidate is read for longer forms only where the short
    form's words stand together behind another word."""
    mentioned: Counter[Name] = Counter()
    for text in shown:
        mentioned.update(names_in(text, asked, memos))
    most = max(mentioned.values(), default=0)
    if most < 2:
        return None
    tops = [n for n, k in mentioned.items() if k == most]
    phrases = [f" {' '.join(top)} " for top in tops]
    carriers: dict[Name, list[int]] = {}
    read = 0
    for i, record in enumerate(records):
        if not any(p in f"{record.canonical} " for p in phrases):
            continue  # no word before the short form: no longer form either
        read += 1
        if read > SCANNED:
            break
        for name in names_in(record.text, asked, memos, inner=True):
            for top in tops:
                if len(name) > len(top) and _ends_with(name, top):
                    found = carriers.setdefault(name[-len(top) - 1 :], [])
                    if not found or found[-1] != i:
                        found.append(i)
    if not carriers:
        return None
    full = max(carriers, key=lambda n: (len(carriers[n]), -carriers[n][0]))
    if any(_ends_with(n, full) for n in mentioned):  # a shown text gives it already
        return None
    return Answer(" ".join(full), tuple(carriers[full]))
