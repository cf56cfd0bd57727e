"""Selection rules that must mean the same in every request: calibrated relevance, the
conflict pair first, every answer covered before relevance fill."""

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packer import Catalog, PackerRuntime, pack_request
from packer.changes import states_change
from packer.relevance import calibrated, min_max
from packer.runtime import Memos
from schemas import PackingConfig
from tests.factories import candidate, document, request


@pytest.fixture(scope="module")
def runtime() -> PackerRuntime:
    return PackerRuntime.load()


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


FILLER = "Visitors arrive by boat from Fiji twice a week during the dry season."
FREE = "Tuvalu is definitely free of plastic waste on its beaches."
NOT_FREE = "It is not guaranteed that Tuvalu is definitely free of plastic waste on its beaches."
SHORT = ["Tuvalu beaches are sunny.", "Tuvalu plastic bags are banned.", "Tuvalu waste is shipped.",
         "Tuvalu is free of snakes.", "Plastic waste is on beaches."]  # fmt: skip


def _pair_request(runtime, budget: int, **config):
    cands = [
        candidate("side1", "d1", text=f"{FILLER} {FREE}", retrieval_score=9.0),
        candidate("side2", "d2", text=f"{FILLER.replace('Fiji', 'Samoa')} {NOT_FREE}",
                  retrieval_score=8.5),
        *(candidate(f"short{k}", f"s{k}", text=t, retrieval_score=8.0 - k)
          for k, t in enumerate(SHORT)),
    ]  # fmt: skip
    docs = [document(c.document_id) for c in cands]
    return pack_request(
        request(*cands, question="Is Tuvalu free of plastic waste on its beaches?"),
        Catalog(docs),
        PackingConfig(max_evidence_tokens=budget, **config),
        runtime,
    )


@pytest.mark.parametrize("budget", [60, 70, 80])
def test_a_detected_disagreement_goes_in_as_a_pair_before_short_passages(runtime, budget):
    """Both sides with their note, before the short passages that win per token; without
    the rule the short ones crowd a side out."""
    packed = _pair_request(runtime, budget)
    shown = {e.evidence_id for e in packed.manifest.evidence}
    assert {"side1", "side2"} <= shown
    assert [sorted(c.evidence_ids) for c in packed.manifest.conflicts] == [["side1", "side2"]]
    assert packed.manifest.budget.used <= budget
    greedy = _pair_request(runtime, budget, enable_pairs_first=False)
    assert not {"side1", "side2"} <= {e.evidence_id for e in greedy.manifest.evidence}


@pytest.mark.parametrize(
    ("unit", "partner", "changed"),
    [
        ("Nov 24, 2023 (Reuters).", "Nov 24, 2023 (Reuters). Exports rose 5% in May.", False),
        ("Exports rose 7% in May.", "Nov 24, 2023 (Reuters). Exports rose 5% in May.", True),
        (NOT_FREE, f"{FILLER} {FREE}", True),
        (FREE, f"{FILLER} {FREE}", False),
    ],
)
def test_a_side_unit_must_state_the_changed_fact(unit, partner, changed):
    memos = Memos()
    mine, theirs = memos.statements(unit).all, memos.statements(partner).all
    assert states_change(unit, partner, mine, theirs) is changed
