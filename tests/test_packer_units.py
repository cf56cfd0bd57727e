"""Sentence units: where sentences end, and the best run of whole sentences that fits."""

from collections.abc import Callable, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packer.records import fold_case
from packer.units import (
    Sentence,
    best_unit,
    complete,
    context_start,
    sentence_spans,
    sentences_of,
)


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


_PROSE = st.lists(
    st.sampled_from(["A", "b", ". ", "? ", "!", '"', "'", "(", "Mr. ", "U.S. ", "\n", "İ", "ß"]),
    max_size=30,
).map("".join)
"""Sentence-like ASCII, and a few characters whose folding changes lengths."""


@given(st.one_of(_PROSE, st.text(max_size=60)))
def test_each_sentence_is_folded_as_its_own_text(text: str):
    """An ASCII text is folded once and each sentence sliced from the fold: the same as
    folding each sentence alone (what any other text gets)."""
    assert [s.folded for s in sentences_of(text)] == [
        fold_case(text[s.start : s.end]) for s in sentences_of(text)
    ]


def _best_span(text: str, value, fits, room: int) -> tuple[int, int] | None:
    """The best run's offsets, `value` and `fits` judging a run's text (each sentence
    holds its own index, so the union of a run names its sentences)."""
    sentences = sentences_of(text)

    def run(i: int, j: int) -> str:
        return text[sentences[i].start : sentences[j].end]

    def run_of(held: frozenset[str]) -> str:
        return run(min(map(int, held)), max(map(int, held)))

    held = [frozenset([str(k)]) for k in range(len(sentences))]
    found = best_unit(
        sentences, held, lambda h: value(run_of(h)), lambda i, j: fits(run(i, j)), room
    )
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


def _reference(
    sentences: Sequence[Sentence],
    held: Sequence[frozenset[str]],
    value: Callable[[frozenset[str]], float],
    fits: Callable[[int, int], bool],
    room: int,
) -> tuple[int, int] | None:
    """The unit search as first written: every run's union built afresh (cubic)."""
    if len(sentences) < 2:
        return None
    options = []
    for i, first in enumerate(sentences):
        for j in range(i, len(sentences)):
            length = sentences[j].end - first.start
            if not sentences[j].complete or length // 4 > room or (i, j) == (0, len(held) - 1):
                break
            score = value(frozenset().union(*held[i : j + 1]))
            if score > 0:
                options.append((-score, -length, i, j))
    return next(((i, j) for _, _, i, j in sorted(options) if fits(i, j)), None)


terms = st.frozensets(st.sampled_from("abcdef"), max_size=3)


@given(
    st.lists(st.tuples(st.integers(1, 80), st.booleans(), terms), max_size=14),
    st.frozensets(st.sampled_from("abcdef")),
    st.integers(0, 120),
    st.integers(0, 400),
    st.sampled_from([0.0, 0.5]),
)
def test_incremental_run_scores_pick_the_run_a_fresh_union_picks(
    shape: list[tuple[int, bool, frozenset[str]]],
    missing: frozenset[str],
    room: int,
    fit_chars: int,
    fresh: float,
) -> None:
    """Runs of sentences of any length, completeness and terms; fits by length."""
    sentences, start = [], 0
    for length, whole, _ in shape:
        sentences.append(Sentence(start, start + length, whole, ""))
        start += length + 1
    held = [h for _, _, h in shape]

    def value(run: frozenset[str]) -> float:
        return len(run) + len(run & missing) + fresh if run else 0.0

    def fits(i: int, j: int) -> bool:
        return sentences[j].end - sentences[i].start <= fit_chars

    assert best_unit(sentences, held, value, fits, room) == _reference(
        sentences, held, value, fits, room
    )


@pytest.mark.parametrize(
    ("second", "leans"),
    [
        ("He moved to Paris in 1901.", True),
        ("They won the cup twice.", True),
        ("It was released in 1994.", True),
        ("It is not true that the bridge opened in 1932.", False),  # an expletive "it"
        ("Its roof was rebuilt in 1950.", False),
        ("Paris was his home after 1901.", False),
    ],
)
def test_a_unit_opening_with_a_subject_pronoun_leans_on_the_sentence_before(second, leans):
    text = f"Jean Dupont was a French painter. {second}"
    sentences = sentences_of(text)
    start = sentences[1].start
    assert context_start(text, start, sentences) == (0 if leans else None)
