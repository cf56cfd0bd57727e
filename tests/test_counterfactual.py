"""`multihop_rag-conflict` over a four-query sample of real MultiHop-RAG news."""

import difflib
import random
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from benchmarks.baselines import Packed
from benchmarks.counterfactual import counterfactual, news_conflict_cases, pool_names
from benchmarks.quality import news_conflict_metrics

SAMPLE = Path(__file__).parent / "data" / "multihop_sample"


def _changes(before: str, after: str) -> list[tuple[str, list[str], list[str]]]:
    a, b = before.split(), after.split()
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    return [(op, a[i1:i2], b[j1:j2]) for op, i1, i2, j1, j2 in matcher.get_opcodes()
            if op != "equal"]  # fmt: skip


def test_the_set_is_deterministic_and_each_copy_changes_one_fact() -> None:
    cases = news_conflict_cases(SAMPLE)
    assert cases == news_conflict_cases(SAMPLE)
    assert len(cases) == 4
    for case in cases:
        texts = {c.evidence_id: c for c in case.request.candidates}
        true, copy = texts[case.true], texts[case.counterfactual]
        [(op, old, new)] = _changes(true.text, copy.text)
        if case.kind == "negation":
            assert (op, old, new) == ("insert", [], ["not"])
        else:
            assert op == "replace" and old != new
            assert case.kind == "name" or len(old) == len(new) == 1
        assert copy.document_id != true.document_id and copy.source_url != true.source_url
        assert copy.effective_at == true.effective_at and copy.title == true.title
        assert case.changed[0] in " ".join(true.text.split())
        assert case.changed[1] in " ".join(copy.text.split())


def test_the_copy_lands_in_its_third_of_the_rank_spread() -> None:
    cases = news_conflict_cases(SAMPLE)
    for index, case in enumerate(cases[:3]):
        ranked = sorted(case.request.candidates, key=lambda c: (-c.retrieval_score, c.evidence_id))
        rank = [c.evidence_id for c in ranked].index(case.counterfactual)
        assert rank in ((0, 1, 2), range(23, 28), range(43, 48))[index] or rank == len(ranked) - 1


def test_a_name_swap_takes_a_name_of_the_same_kind_from_the_pool() -> None:
    pool = [
        "Sam Bankman-Fried said Caroline Ellison ran Alameda Research.",
        "Prosecutors said Caroline Ellison and Gary Wang testified for the government.",
        "The judge told Gary Wang to answer, and Gary Wang did.",
        "The iPhone 15 Pro costs more; a pro model is not cheap.",
        "Its Pro model sold out, a Pro user said.",
    ]
    names = pool_names(pool)
    assert "Pro" not in names  # a common word the pool writes in lower case
    text = "Later, Caroline Ellison said the loans were repaid."
    made = counterfactual(text, names, frozenset({"Caroline", "Gary"}), random.Random(3))
    assert made is not None
    new, edit, changed = made
    assert edit.kind == "name"  # a fact to change is preferred to a negation
    assert new == "Later, Gary Wang said the loans were repaid."
    assert changed == ("Later, Caroline Ellison said", "Later, Gary Wang said")


def test_the_pair_counts_only_when_both_sides_of_the_changed_fact_are_shown() -> None:
    [case, *_] = news_conflict_cases(SAMPLE)
    texts = {c.evidence_id: c.text for c in case.request.candidates}
    both = Packed(
        context="",
        shown={case.true: texts[case.true], case.counterfactual: texts[case.counterfactual]},
        conflicts=(frozenset({case.true, case.counterfactual}),),
    )
    one = Packed(context="", shown={case.true: texts[case.true]}, conflicts=())
    unflagged = Packed(context="", shown=both.shown, conflicts=())
    scores = news_conflict_metrics([case] * 3, [both, one, unflagged], [0, 0, 0])
    assert scores["pair_kept"] == 66.7
    assert scores["pair_kept_flagged"] == 33.3
    assert scores["true_kept"] == 100.0 and scores["counterfactual_kept"] == 66.7


SYMBOLS = "Ab1,.:- not was March Monday Wang Gary 2023 ٣"


@given(st.text(alphabet=st.sampled_from(SYMBOLS), max_size=80))
def test_any_sentence_gets_one_change_or_none(text: str) -> None:
    names = pool_names([text, "Gary Wang met Gary Wang.", "Mr Wang and Gary Wang"])
    made = counterfactual(text, names, frozenset({"Gary"}), random.Random(0))
    if made is not None:
        new, _, changed = made
        assert new != text and changed[0] != changed[1]
