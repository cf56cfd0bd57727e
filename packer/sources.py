"""What the publishers a question names tell about a request's candidates: which are of
a named publisher, how much of what the question says of it each holds, and which
carry a name that candidates of two named publishers share.

A question naming two or three publishers ("Which company, reported by both
TechCrunch and The Verge, ...") asks for what their reports have in common: the
company, the person, the product they both speak of. The claim of each report
shares few words with the question (it was paraphrased into it), so among a
publisher's five or more facts the lexical score barely tells the evidence from
the rest; the name the evidence shares with another named publisher's facts
does. A name here is a capitalized content word past a text's first word that
the question does not hold (`records.name_words`). On MultiHop-RAG (250 queries,
all evidence packed at 150/200/256/400/512), a candidate holding a shared name
worth `shared_name` 1 more: 59.3/68.5/84.7/99.1/100 -> 62.0/73.6/87.5/99.1/100,
and widened to 50 candidates 45.4/54.2/62.0/71.8/75.0 ->
48.1/57.4/69.0/79.2/83.3. Rejected on the same queries: 0.5 (lower at every
budget), 1.5 and 2 (up to 1.8 higher at 400 and 512 on the widened set, lower
at 150 to 256); worth its share of the shared names rather than 1 (lower at
every budget); worth half the number of publishers sharing it (lower);
names shared by a third of the candidates or more left out (MultiHop-RAG -1.8
at 150). Rejected, measured on 150 questions a set: names shared by two
documents when the question names no publisher (HotpotQA +3.3 at 256,
hotpotqa-notitle +4.0 at 256 and 512, but ConflictNQ -12.0/-34.7 at 150/256,
still -9.3/-21.4 with names held by half the candidates or more left out: its
fakes share their invented answer, the real passage does not) and the
question's own names worth 1 to 4 more (MultiHop-RAG -1.6 to -4.7 at 150).
Rejected, 300 queries a set at 150/200/256/400: the named publisher's worth for
its best-ranked K facts only, so that its short off-topic facts ranked low
(21st to 40th of 50) stop taking the room (`multihop_rag-50` K=8:
+0.7/+5.0/+2.3/-2.0, MultiHop-RAG -0.4 at 256; K=5: +1.1/+5.4/+1.5/-2.0 and
MultiHop-RAG -0.4/-1.2/-2.7 at 150 to 256; K=3: MultiHop-RAG -3.5 to -8.1).
"""

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from packer.records import Evidence, canonical_words, content_terms, name_words
from packer.subjects import on_named_day, publisher_of

_NONE: frozenset[int] = frozenset()


@dataclass(frozen=True, slots=True)
class NamedSources:
    """The candidates (by index) the question's named publishers bear on."""

    publisher: dict[int, str]
    """Items whose publisher the question names (on a day it names, when it names days)."""
    term_share: dict[int, float]
    """Of those, the share each holds of the question's terms said of its publisher,
    each term weighted by how rare it is among the request's candidates (`_rarity`)."""
    shared: frozenset[int]
    """Items holding a name that items of two or more named publishers hold."""


def named_sources(
    records: Sequence[Evidence],
    terms: Sequence[frozenset[str]],
    sources: Mapping[str, frozenset[str]],
    days: frozenset[tuple[int | None, int, int]],
    question: str,
) -> NamedSources:
    """What `sources` (`subjects.publisher_segments`) tell about `records`, whose
    question terms are `terms` (by index); `question` is the question's canonical words,
    joined (its words are no shared name)."""
    if not sources:
        return NamedSources({}, {}, _NONE)
    publisher = {
        i: name
        for i, record in enumerate(records)
        if (name := publisher_of(record.candidate.source_url or "")) in sources
        and _on_day(record.effective_at, days)
    }
    rarity = _rarity(terms, frozenset().union(*sources.values()))
    share = {i: _share(terms[i], sources[p], rarity) for i, p in publisher.items()}
    if len(set(publisher.values())) < 2:  # no second publisher to share a name with
        return NamedSources(publisher, share, _NONE)
    question_words = question.split()
    names = [_names(r.text).difference(question_words) for r in records]
    held_by: dict[str, set[str]] = {}
    for i, p in publisher.items():
        for name in names[i]:
            held_by.setdefault(name, set()).add(p)
    shared = {name for name, held in held_by.items() if len(held) > 1}
    return NamedSources(
        publisher, share, frozenset(i for i, n in enumerate(names) if not shared.isdisjoint(n))
    )


def _on_day(at: datetime | None, days: frozenset[tuple[int | None, int, int]]) -> bool:
    return not days or on_named_day(at, days)


def _names(text: str) -> frozenset[str]:
    """The names a text writes (capitalized content words past its first), folded."""
    return content_terms(name_words(canonical_words(text, fold=False)))


def _rarity(terms: Sequence[frozenset[str]], wanted: frozenset[str]) -> dict[str, float]:
    """Each `wanted` term's weight among the n candidates holding `terms`: its inverse
    document frequency, log((n + 1) / (holders + 0.5)), positive for every term.

    The words a question says of a publisher mix its claim ("siphons off news
    publishers' revenue") with the words every question of its kind says
    ("report", "article", "published", "portrayal"), which the publisher's
    off-topic facts hold as often as its evidence. MultiHop-RAG all evidence at
    150/256/512 (all queries, with the joint mentions): `multihop_rag-50`
    48.0/66.4/82.8 -> 50.1/66.4/82.5, MultiHop-RAG 60.6/86.0/100 ->
    60.8/86.0/100. Rejected: a floor on the share's denominator, so that a
    publisher said one word is not matched whole by it (4 or 8 terms: within 0.8
    points on 300 queries); the question's terms in a candidate's title as well
    (`multihop_rag-50` +1.5/+1.5 at 150/256 but MultiHop-RAG -1.6 at 150: an
    article's off-topic facts share its title).
    """
    holders = Counter(t for found in terms for t in found)
    return {t: math.log((len(terms) + 1) / (holders[t] + 0.5)) for t in wanted}


def _share(found: frozenset[str], wanted: frozenset[str], rarity: Mapping[str, float]) -> float:
    """The share of `wanted` that is `found`, each term weighted by its `rarity`."""
    total = sum(rarity[t] for t in wanted)
    return sum(rarity[t] for t in found & wanted) / total if total else 0.0
