"""Sentence units: where sentences end, and the best run of whole sentences that fits."""

from hypothesis import given
from hypothesis import strategies as st

from packer.units import best_unit, complete, sentence_spans, sentences_of


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


def _best_span(text: str, value, fits, room: int) -> tuple[int, int] | None:
    """The best run's offsets, `value` and `fits` judging a run's text."""
    sentences = sentences_of(text)

    def run(i: int, j: int) -> str:
        return text[sentences[i].start : sentences[j].end]

    found = best_unit(sentences, lambda i, j: value(run(i, j)), lambda i, j: fits(run(i, j)), room)
    return (sentences[found[0]].start, sentences[found[1]].end) if found else None


def _best(text: str, value, fits, room: int) -> str | None:
    span = _best_span(text, value, fits, room)
    return text[span[0] : span[1]] if span else None


def test_the_best_run_holds_the_terms_and_fits():
    text = "Filler about nothing. The refund window is 30 days. Refunds take a week. More filler."
    best = _best(text, lambda run: run.count("efund"), lambda run: len(run) <= 60, 60)
    assert best == "The refund window is 30 days. Refunds take a week."


def test_no_unit_when_nothing_of_value_fits():
    text = "One sentence here. Another one there."
    assert _best(text, lambda run: 0.0, lambda run: True, 100) is None
    assert _best("Only one sentence.", lambda run: 1.0, lambda run: True, 100) is None


words = st.sampled_from(["Alpha", "beta", "U.S.", "Mr.", "4,000", "gamma.", "Delta!", "e.g.", "x"])


@given(st.lists(words, max_size=30), st.integers(5, 200))
def test_a_unit_is_a_run_of_complete_sentences_of_the_text(tokens, room):
    text = " ".join(tokens)
    unit = _best_span(text, lambda run: 1.0, lambda run: len(run) <= room, room)
    if unit is not None:
        start, end = unit
        assert 0 < end - start <= room and text[start:end] != text.strip()
        spans = sentence_spans(text)
        assert start in {a for a, _ in spans} and end in {b for _, b in spans}
        assert all(complete(text[a:b]) for a, b in spans if start <= a and b <= end)
