"""Flagged pairs the RAMDocs labels count as false though the two texts do disagree.

Read by hand, pair by pair, from the pairs our conflict rules flag on the
whole set (budget 2048): in each, the two documents' texts differ in the very
value the question asks, yet the labels do not put one on each side, so the
pair counts against precision whatever a packer does. The report gives
conflict precision both as labelled and with these pairs set apart, never only
the second. A pair is named by its request and the two documents' indices
(`rd130.0/2` is documents 0 and 2 of request `rd-130`, ids `rd130.0` and
`rd130.2`). Rejected: relabelling the set (the labels stay the set's; only the
report says which pairs it doubts).
"""

AMBIGUOUS = (
    "rd130.0/2 rd155.1/3 rd166.2/4 rd181.1/3 rd249.0/2 rd319.2/5 rd383.1/6 rd452.0/2 "
    "rd473.4/6 rd473.5/6 rd473.5/7 rd481.0/1"
)
"""Both labelled correct, answers differ and the two texts say so (an ambiguous question
answered by one article edited, the same words around the answer: `Telugu` / `Hindi`
for one 1941 film; two towns' census rows)."""
EDITED_CORRECT = "rd94.0/1 rd158.0/3 rd173.1/4 rd375.1/4 rd400.0/1 rd410.2/3 rd491.2/6"
"""Both labelled correct with the same answer, one text edited to another value
(`Cleonymus` / `Acrotatus`; `Note: The context has been modified to replace "Jazz" with
"Country"`)."""
EDITED_NOISE = "rd0.1/2 rd172.0/1 rd336.0/1 rd438.0/3 rd492.0/1"
"""One side labelled noise that is the other's text with one value changed (population
3,559 / 10,000)."""


def _pair(name: str) -> frozenset[str]:
    request, documents = name.split(".")
    first, second = documents.split("/")
    return frozenset((f"{request}.{first}", f"{request}.{second}"))


LABEL_PROBLEMS: frozenset[frozenset[str]] = frozenset(
    _pair(name) for names in (AMBIGUOUS, EDITED_CORRECT, EDITED_NOISE) for name in names.split()
)
"""Every documented pair, as the two evidence ids."""
