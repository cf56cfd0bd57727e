"""Whether a unit of a conflict member states what changed against its partner.

A side sent as a part of its passage must carry the disagreement itself: a fact
word (a number, a name, a month: `records.fact_words`) the partner does not
write, or a statement the partner makes with the opposite polarity. A dateline
or a heading the two copies share (`Nov 24, 2023 ...`) holds neither, so two such
fragments flagged as disagreeing say nothing; rejected: a side unit chosen only as
the statement nearest the partner's (`statements.side_unit`), which on news
copies was often that shared dateline while the changed figure sat in the tail.
"""

from collections.abc import Sequence

from packer.records import fact_words
from packer.statements import Statement, same_statement


def states_change(
    unit: str, partner: str, mine: Sequence[Statement], theirs: Sequence[Statement]
) -> bool:
    """Whether the `unit` text (whose complete sentences are `mine`) holds a fact word the
    `partner` text lacks, or one of its statements is one of the partner's (`theirs`)
    with the opposite polarity."""
    if fact_words(unit) - fact_words(partner):
        return True
    return any(m.negated != t.negated and same_statement(m, t) for m in mine for t in theirs)
