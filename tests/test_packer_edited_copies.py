"""An edited copy of a news report, ranked low, still goes in beside its original."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packer import Catalog, PackerRuntime, pack_request
from packer.first import EDIT_WORDS, edited_copy
from schemas import PackingConfig
from tests.factories import candidate, document, request

QUESTION = "What did the Apple executive say in court about Google's search deal?"
TRUE = ("Eddy Cue testified on Tuesday that Apple received about 36 percent of Google's "
        "search advertising revenue from Safari under the deal.")  # fmt: skip
EDITED = TRUE.replace("36 percent", "72 percent")
# Like pages: two seasons of one club, alike in shape, different in many facts.
SEASON = ("The 2011-12 season was the club's 14th in the league, finishing 6th with 58 "
          "points under manager Tony Pulis after a run to the cup quarter-finals.")  # fmt: skip
NEXT_SEASON = ("The 2012-13 season was the club's 15th in the league, finishing 13th with 42 "
               "points under manager Mark Hughes after a third-round cup exit.")  # fmt: skip
SHORT = [
    "Google declined to comment on the testimony.",
    "Apple shares rose 1 percent on Tuesday.",
    "The trial is expected to last ten weeks.",
    "Microsoft's Bing trails far behind.",
    "Safari is the default browser on iPhones.",
]


@pytest.fixture(scope="module")
def runtime() -> PackerRuntime:
    return PackerRuntime.load()


def _pack(runtime: PackerRuntime, low: tuple[str, str], budget: int):
    """The short facts ranked best, the two long passages below them."""
    texts = [*SHORT, *low]
    cands = [
        candidate(f"c{k}", f"d{k}", text=t, retrieval_score=9.0 - k) for k, t in enumerate(texts)
    ]
    docs = [document(c.document_id) for c in cands]
    settings = PackingConfig(max_evidence_tokens=budget)
    packed = pack_request(request(*cands, question=QUESTION), Catalog(docs), settings, runtime)
    assert packed.manifest.budget.used <= budget
    return packed, {e.evidence_id for e in packed.manifest.evidence}


@pytest.mark.parametrize("budget", [70, 85, 100])
def test_an_edited_copy_ranked_low_goes_in_with_its_original(runtime, budget):
    """Without the rule the short facts win per token and the pair is left out here."""
    packed, shown = _pack(runtime, (TRUE, EDITED), budget)
    assert {"c5", "c6"} <= shown
    assert [sorted(c.evidence_ids) for c in packed.manifest.conflicts] == [["c5", "c6"]]


@pytest.mark.parametrize("budget", [70, 85, 100])
def test_like_pages_ranked_low_are_left_to_the_fill(runtime, budget):
    assert not edited_copy(SEASON, NEXT_SEASON)
    _, shown = _pack(runtime, (SEASON, NEXT_SEASON), budget)
    assert not {"c5", "c6"} <= shown


def test_an_edited_copy_is_one_run_of_a_few_words_changed():
    assert edited_copy(TRUE, EDITED)
    assert edited_copy(TRUE, TRUE.replace("testified", "did not testify"))
    assert edited_copy(TRUE, TRUE.replace("Eddy Cue", "Tim Cook"))
    assert not edited_copy(TRUE, TRUE)
    assert not edited_copy(TRUE, TRUE.replace("36", "72").replace("Tuesday", "Monday"))
    assert not edited_copy(TRUE, "Apple received a share of revenue.")


WORDS = st.lists(st.sampled_from(["Apple", "36", "not", "said", "Cue", "percent", ""]), max_size=12)


@given(WORDS, WORDS, st.lists(st.sampled_from(["Google", "72", "did"]), max_size=EDIT_WORDS + 2))
def test_a_copy_is_edited_when_its_one_changed_run_is_short(head, tail, middle):
    a = " ".join([*head, *tail])
    b = " ".join([*head, *middle, *tail])
    assert edited_copy(a, b) == (0 < len(middle) <= EDIT_WORDS)
    assert edited_copy(a, b) == edited_copy(b, a)
