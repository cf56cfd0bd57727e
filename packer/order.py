"""Ordering policies for the packed evidence (recorded in the manifest)."""

from packer.records import Evidence
from schemas.config import OrderPolicy


def order_records(records: list[Evidence], policy: OrderPolicy) -> list[Evidence]:
    """Order chosen evidence; labels E1..En follow this order.

    relevance: best first. best_last: best nearest the question. edges: best at
    both ends, weakest in the middle. chronological: oldest effective date first
    (undated last). Ties always break on rank (score, then evidence id).
    """
    ranked = sorted(records, key=Evidence.rank_key)
    if policy == "relevance":
        return ranked
    if policy == "best_last":
        return ranked[::-1]
    if policy == "edges":
        return ranked[0::2] + ranked[1::2][::-1]
    if policy == "chronological":
        return sorted(
            ranked,
            key=lambda r: (
                r.effective_at is None,
                r.effective_at.timestamp() if r.effective_at else 0.0,
            ),
        )
    raise ValueError(f"unknown order policy {policy!r}")
