"""Answer-type evidence: which sentence of a passage answers the question."""

import pytest

from packer.answer_evidence import answer_kind, answers
from packer.question import read_question
from packer.units import sentences_of


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
    assert answer_kind(read_question(question)) == kind


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
    asked = read_question(question)
    terms = asked.terms
    kind = answer_kind(asked) or "date"
    found = []
    for s in sentences_of(PASSAGE):
        held = frozenset(t for t in terms if t in s.folded)
        found.append(answers(PASSAGE[s.start : s.end], s.folded, kind, held, terms))
    assert found == answering


def test_a_name_answers_who_when_it_is_no_word_of_the_question():
    terms = read_question("Who directed the film Big Girl?").terms
    held = frozenset({"directed"})
    said = "The film was directed by Renuka Jeyapalan in 2005."
    assert answers(said, said.lower(), "name", held, terms)
    echo = "The film Big Girl was directed in 2005."
    assert not answers(echo, echo.lower(), "name", held, terms)
