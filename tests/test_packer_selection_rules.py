"""Selection rules that must mean the same in every request: calibrated relevance, the
conflict pair first, every answer covered before relevance fill."""

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packer.relevance import calibrated, min_max

SCORES = st.lists(st.floats(min_value=0.0, max_value=1e6, allow_nan=False), min_size=1)


def test_relevance_of_a_short_request_is_that_of_a_long_one():
    """Four candidates or fifty: the same rank and share of the top score, the same
    relevance (min-max gave the lowest of a short list 0, the same passage 0.44 in a
    long one)."""
    short = [10.0, 9.0, 8.0, 5.0]
    long = short + [1.0] * 46
    assert calibrated(short) == calibrated(long)[:4]
    assert min_max(short)[3] == 0.0 < min_max(long)[3]
    assert calibrated(short)[3] == pytest.approx(2 / 5 * 0.5)


def test_relevance_without_positive_scores_is_the_rank_alone():
    assert calibrated([-1.0, -2.0, -3.0]) == [1.0, pytest.approx(2 / 3), 0.5]
    assert calibrated([]) == []


@given(SCORES, st.floats(min_value=0.01, max_value=100.0))
def test_relevance_is_bounded_ordered_and_scale_free(scores, scale):
    out = calibrated(scores)
    assert all(0.0 <= r <= 1.0 for r in out)
    by_score = sorted(zip(scores, out, strict=True), reverse=True)
    assert all(a[1] >= b[1] for a, b in pairwise(by_score))
    scaled = calibrated([s * scale for s in scores])
    if all(s * scale > 0 or s == 0 for s in scores):
        assert scaled == pytest.approx(out)
