"""Answer-type evidence: which sentence of a passage answers the question."""

import pytest

from packer.answer_evidence import answer_kind, answers
from packer.records import question_terms
from packer.typed_claims import claims_of


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How many people live in Tuvalu?", "number"),
        ("When did the bridge open?", "date"),
        ("Who directed Big Girl?", "name"),
        ("Is Tuvalu free of plastic waste?", "polar"),
        ("Does the warranty cover water damage?", "polar"),
        ("What is the genre of Big Girl?", None),
    ],
)
def test_the_kind_of_answer_a_question_asks_for(question, kind):
    assert answer_kind(question) == kind


PASSAGE = (
    "Tuvalu is a small island nation located in the Pacific Ocean. "
    "Its population was 11,200 in 2017, most of it on Funafuti. "
    "It is not guaranteed that Tuvalu is free of plastic waste."
)


@pytest.mark.parametrize(
    ("question", "answering"),
    [
        ("What was the population of Tuvalu?", [False, True, False]),
        ("In what year was the population of Tuvalu counted?", [False, True, False]),
        ("Is Tuvalu free of plastic waste?", [False, False, True]),
    ],
)
def test_the_sentence_that_answers(question, answering):
    terms = question_terms(question)
    claims = claims_of(PASSAGE)
    kind = answer_kind(question) or "date"
    held = [frozenset(t for t in terms if t in " ".join(c.words)) for c in claims]
    assert [answers(c, kind, h, terms) for c, h in zip(claims, held, strict=True)] == answering
