"""The held-out yes/no shape on the fixture tests/data/yes_no_sides.json: debated
questions whose passages argue a side mostly in their own words."""

from collections import Counter

from benchmarks.yes_no_sides import load


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
