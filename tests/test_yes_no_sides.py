"""The held-out yes/no shape on the fixture tests/data/yes_no_sides.json: debated
questions whose passages argue a side mostly in their own words, so that no sentence
holds two thirds of the question's terms and no side is read (`answers.positions`)."""

import json
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.yes_no_sides import BUDGETS, gap_closed, load, main, measure, report_section
from packer import Catalog, PackerRuntime, pack_request
from packer.answers import positions
from packer.first import FEW_CANDIDATES
from packer.question import read_question
from packer.records import Evidence, text_facts
from packer.runtime import Memos
from schemas import PackingConfig
from tests.factories import candidate, document, request
from tests.strategies import markup


@pytest.fixture(scope="module")
def runtime() -> PackerRuntime:
    return PackerRuntime.load()


def test_the_fixture_has_both_sides_of_every_question_in_other_documents():
    questions = load()
    assert len(questions) >= 12
    ids = Counter(key for q in questions for key in q.texts)
    assert max(ids.values()) == 1
    for q in questions:
        sides = Counter(q.sides.values())
        assert sides["yes"] >= 1 and sides["no"] >= 1, q.question
        assert set(sides) <= {"yes", "no", "neither"}
        assert 4 <= len(q.texts) <= 6, q.question


def test_sides_written_in_other_words_each_get_a_whole_passage():
    """With the defaults, a whole passage of each side in more rank orders than the naive
    loop at every budget, and half the gap to the oracle closed or more; without the
    sides rule (`enable_sides_first` off), less at the tightest budget."""
    questions = load()
    on = measure(questions, BUDGETS, 12)
    off = measure(questions, BUDGETS[:1], 12, enable_sides_first=False)
    for budget in BUDGETS:
        assert on["ours"][budget] >= on["naive"][budget], budget
        gap = gap_closed(on, budget)
        assert gap is None or gap >= 0.5, (budget, on)
    assert off["ours"][BUDGETS[0]] < on["ours"][BUDGETS[0]]


def test_the_run_writes_its_figures_for_the_report(tmp_path):
    """`make eval` writes the figures; the report shows each budget's shares and gap; a
    variant (`--set`) is printed only, never passed off as the defaults' figures."""
    out = tmp_path / "yes_no_sides.json"
    assert main(["--budgets", "150", "300", "--orders", "2", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert [r["budget"] for r in result["rows"]] == [150, 300] and result["orders"] == 2
    row = result["rows"][0]
    assert 0.0 <= row["naive"] <= row["oracle"] <= 1.0
    text = "\n".join(report_section(result))
    assert f"| 150 | {row['naive']} | {row['ours']} | {row['oracle']} |" in text
    variant = tmp_path / "variant.json"
    args = ["--budgets", "150", "--orders", "1", "--out", str(variant)]
    assert main([*args, "--set", "enable_sides_first=false"]) == 0 and not variant.exists()


NUCLEAR = next(q for q in load() if q.question == "Is nuclear power safe?")
RANKED = ("yes-deaths", "yes-navy", "no-fukushima", "no-waste", "neither-france")
ELSEWHERE = [
    "Uranium prices rose 8 percent last quarter as utilities in Asia signed new contracts.",
    "The agency's annual report on power grids was published on Tuesday in Vienna.",
]


def _pack(runtime, texts: dict[str, str], budget: int, **config):
    cands = [
        candidate(key, f"d{k}", text=text, retrieval_score=9.0 - k)
        for k, (key, text) in enumerate(texts.items())
    ]
    docs = [document(c.document_id) for c in cands]
    settings = PackingConfig(max_evidence_tokens=budget, **config)
    question = NUCLEAR.question
    packed = pack_request(request(*cands, question=question), Catalog(docs), settings, runtime)
    assert packed.manifest.budget.used <= budget
    whole = {e.evidence_id.split("-")[0] for e in packed.manifest.evidence if not e.partial}
    return packed, whole


def _ranked() -> dict[str, str]:
    return {key: NUCLEAR.texts[f"nuclear-{key}"] for key in RANKED}


def test_unread_sides_of_a_small_request_go_in_as_the_shortest_whole_passages(runtime):
    """No passage echoes "nuclear power safe", so no side is read: the fill took the long
    affirmation ranked first whole and the other affirmation, no denial; now the shortest
    go in whole first, a denial among them."""
    records = [_evidence(key, text) for key, text in _ranked().items()]
    assert positions(records, read_question(NUCLEAR.question).terms, Memos()) == {}
    _, whole = _pack(runtime, _ranked(), 150)
    assert {"yes", "no"} <= whole
    _, before = _pack(runtime, _ranked(), 150, enable_sides_first=False)
    assert "no" not in before


def test_a_request_of_many_candidates_is_left_to_the_fill(runtime):
    """The twin: the same passages among more than `FEW_CANDIDATES`, where the shortest are
    more often the retriever's look-alikes: the packet is the one without the rule."""
    texts = {**_ranked(), **{f"other{k}": t for k, t in enumerate(ELSEWHERE)}}
    assert len(texts) > FEW_CANDIDATES
    on, _ = _pack(runtime, texts, 150)
    off, _ = _pack(runtime, texts, 150, enable_sides_first=False)
    assert on.prompt.messages == off.prompt.messages


def _evidence(key: str, text: str) -> Evidence:
    c = candidate(key, key, text=text)
    return Evidence(c, c.document_id, "r1", None, c.text, text_facts(c.text), 0.5, (), None)


_ANY_TEXT = st.one_of(markup, st.text(max_size=200))


@given(st.lists(_ANY_TEXT, min_size=1, max_size=FEW_CANDIDATES), _ANY_TEXT)
def test_sides_of_any_text_are_read_without_failing(texts, subject):
    """Whatever the passages and the question's subject hold (markup, line breaks, any
    code point), the side reading names only real candidates."""
    records = [_evidence(f"e{k}", t) for k, t in enumerate(texts)]
    read = positions(records, read_question(f"Is {subject} safe?").terms, Memos())
    assert set(read) <= set(range(len(texts)))


@given(st.lists(_ANY_TEXT.filter(str.strip), min_size=1, max_size=FEW_CANDIDATES))
def test_a_small_yes_no_request_of_any_text_stays_within_its_budget(runtime, texts):
    _pack(runtime, {f"e{k}": t for k, t in enumerate(texts)}, 150)
