"""Relevance that means the same in every request: a candidate's rank worth times its
score's share of the top score.

The retriever's scores have no fixed scale (BM25 grows with the question's length,
a reranker's logits with the model), so relevance reads them only against the
request's best: a passage half as relevant as the top one is worth half, whether
the request holds 4 candidates or 50. The rank says the same in every request
too: rank r is worth `RANK_HALF / (RANK_HALF + r)` (the top 1, the third a
half). Rejected: min-max over the request's own scores (the old relevance, kept
as the `no-calibrated-relevance` ablation), which gives the lowest of four
candidates 0 however close its score, so a short passage of the other side of a
yes/no question could not compete with a long one of the top side. Measured on
the full visible sets at 150/256/512/1024 against min-max, ConflictNQ both
sides kept 39.0/58.3 -> 40.8/67.4 at 150/256, MultiHop-RAG 51.7/77.2 ->
53.4/79.3, HotpotQA 58.0 -> 59.4 at 256, no cell lower by more than 0.6.
Rejected on 300 questions a set (where this rule gave ConflictNQ +1.3/+10.0):
the mean of the two worths (ConflictNQ -5.4/-10.4: every passage keeps a high
worth, and per token the short fakes win), the score share alone (-1.7/-3.0),
the rank alone with its worth halved at rank 1 (0.0/+1.6, hotpotqa-notitle -1.0
at 150), the product at `RANK_HALF` 4 or 8 (+4.6 and -0.4 at 256).
When the top score is not positive (logits, distances), the rank alone counts.
"""

from collections.abc import Sequence

RANK_HALF = 2.0
"""The rank whose worth is half the top one's."""


def calibrated(scores: Sequence[float]) -> list[float]:
    """Each score's relevance in [0, 1]: its rank's worth times its share of the top score
    (the rank's worth alone when the top score is not positive). Ties share a rank:
    equal scores are equally relevant."""
    ranked = sorted(scores, reverse=True)
    rank_of: dict[float, int] = {}
    for rank, score in enumerate(ranked):
        rank_of.setdefault(score, rank)
    top = ranked[0] if ranked else 0.0
    out = []
    for score in scores:
        worth = RANK_HALF / (RANK_HALF + rank_of[score])
        out.append(worth * max(0.0, score) / top if top > 0 else worth)
    return out


def min_max(scores: Sequence[float]) -> list[float]:
    """Each score scaled over the request's own lowest and highest (all 1 when equal)."""
    low, high = min(scores, default=0.0), max(scores, default=0.0)
    span = high - low
    return [(s - low) / span if span > 0 else 1.0 for s in scores]
