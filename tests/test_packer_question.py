"""The question read once (`packer.question`): what every step that weighs passages against
it reads, held to what each step read from the text itself before."""

from hypothesis import given
from hypothesis import strategies as st

from packer.question import MIN_STEM, read_question, stem
from packer.records import STOPWORDS, canonical_words
from tests.strategies import markup, texts


@given(st.one_of(texts(), markup, st.text()))
def test_any_question_reads_and_its_parts_are_its_own_words(text: str) -> None:
    question = read_question(text)
    assert list(question.words) == canonical_words(text)
    assert list(question.cased) == canonical_words(text, fold=False)
    assert question.terms <= set(question.words)
    assert not question.terms & STOPWORDS
    assert all(len(t) >= 3 for t in question.terms)
    assert question.names <= {w.lower() for w in question.cased[1:]}
    assert question.slot_words <= question.terms
    assert question.joined == " ".join(canonical_words(text))
    assert len(question.stems) <= len(question.terms)
    assert all(any(t.startswith(s) for t in question.terms) for s in question.stems)


def test_the_slot_words_say_the_kind_of_value_not_the_subject() -> None:
    question = read_question("How many people lived in Springfield in 1990?")
    assert question.slot == "number"
    assert question.slot_words == {"many"}
    assert question.names == {"springfield"}
    assert "people" in question.terms and "springfield" in question.terms


def test_a_stem_drops_an_inflection_and_keeps_the_word_it_finds() -> None:
    assert [stem(w) for w in ("billions", "companies", "accused", "sanctions", "buildings")] == [
        "billion", "compan", "accus", "sanction", "build",
    ]  # fmt: skip
    # too short to lose a letter, or a derivation (it changes what is said)
    for word in ("news", "uses", "bias", "competitiveness", "status", "analysis"):
        assert stem(word) == word


@given(st.text(alphabet="abcdeginrsz", min_size=1, max_size=12))
def test_a_stem_is_a_prefix_of_its_word_and_never_shorter_than_the_floor(word: str) -> None:
    stemmed = stem(word)
    assert word.startswith(stemmed)
    assert stemmed == word or len(stemmed) >= MIN_STEM
