"""Sentence units: where sentences end, and the best run of whole sentences that fits."""

from hypothesis import given
from hypothesis import strategies as st

from packer.units import best_unit, complete, sentence_spans


def _sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in sentence_spans(text)]


def test_abbreviations_and_initials_do_not_end_a_sentence():
    text = "Mr. Smith met Dr. Jones in the U.S. capital. It is named after Reginald C. Punnett."
    assert _sentences(text) == [
        "Mr. Smith met Dr. Jones in the U.S. capital.",
        "It is named after Reginald C. Punnett.",
    ]


def test_fragments_left_by_chunking_are_not_complete_sentences():
    text = "and moved away. He returned in 1990. The town grew to 4,000 people by"
    first, middle, last = _sentences(text)
    assert not complete(first) and complete(middle) and not complete(last)


def test_the_best_run_holds_the_terms_and_fits():
    text = "Filler about nothing. The refund window is 30 days. Refunds take a week. More filler."
    unit = best_unit(
        text,
        value=lambda run: run.count("efund"),
        cost=len,
        fits=lambda run: len(run) <= 60,
        room=60,
    )
    assert unit is not None
    assert text[unit[0] : unit[1]] == "The refund window is 30 days. Refunds take a week."


def test_no_unit_when_nothing_of_value_fits():
    text = "One sentence here. Another one there."
    assert best_unit(text, lambda run: 0.0, len, lambda run: True, 100) is None
    assert best_unit("Only one sentence.", lambda run: 1.0, len, lambda run: True, 100) is None


words = st.sampled_from(["Alpha", "beta", "U.S.", "Mr.", "4,000", "gamma.", "Delta!", "e.g.", "x"])


@given(st.lists(words, max_size=30), st.integers(5, 200))
def test_a_unit_is_a_run_of_complete_sentences_of_the_text(tokens, room):
    text = " ".join(tokens)
    unit = best_unit(text, lambda run: 1.0, len, lambda run: len(run) <= room, room)
    if unit is not None:
        run = text[unit[0] : unit[1]]
        assert run and len(run) <= room and run != text.strip()
        spans = sentence_spans(text)
        assert unit[0] in {a for a, _ in spans} and unit[1] in {b for _, b in spans}
        assert all(complete(text[a:b]) for a, b in spans if unit[0] <= a and b <= unit[1])
