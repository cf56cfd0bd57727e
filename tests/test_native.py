"""The C kernels of the canonical form return what their pure-Python twins return.

`packer/_native.c` replaces twelve functions on the packing path (`scan_words`,
`text_words`, `word_count` of `packer.records`, `sentence_bounds` of
`packer.units`, `sentence_words` of `packer.statements`, `minhash` of `packer.sketch`,
`shared_openings` of `packer.reprint_pairs`, `shared_words` and `alignment` of
`packer.reprints`, `word_postings` of `packer.polarity`, `contained` of
`packer.records`, `capital_runs` of `packer.typed_claims`); packing output must not
depend on whether a C compiler was present at install. The twins are compared over
generated texts (the characters the rules turn on, and any Unicode), and every code
point is classified in each context a rule looks at.
"""

import sys
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packer import (  # needs a build
    _native,
    answers,
    packet,
    polarity,
    records,
    reprint_pairs,
    reprints,
    sketch,
    statements,
    typed_claims,
    units,
)
from packer.native import kernels
from tests import test_packer_golden as golden

RULE_CHARACTERS = st.sampled_from(
    [*"aZé_09٠١²½.,-+ \t\n\x1c\u2028", "\u2212", "ǅ", "𝟎", "一", *records.SYMBOLS]
)
TEXTS = st.one_of(st.text(RULE_CHARACTERS, max_size=60), st.text(max_size=60))


def _every_code_point_in(contexts: str, chunk: int = 2048) -> Iterator[tuple[int, str]]:
    """Every code point set in `contexts` (at each `{c}`), 2,048 to a text: (first, text)."""
    for first in range(0, sys.maxunicode + 1, chunk):
        last = min(first + chunk, sys.maxunicode + 1)
        yield first, "|".join(contexts.format(c=chr(c)) for c in range(first, last))


@settings(max_examples=3000)
@given(TEXTS)
def test_words_equal_the_regex_twin(text: str) -> None:
    assert _native.words(text) == records.scan_words(text)


SOME_WORDS = [*sorted(records.STOPWORDS)[:8], "a", "b", "1", "no", "t", "not", "é"]
WORDS_SET = st.frozensets(st.one_of(st.sampled_from(SOME_WORDS), st.text(max_size=3)))


@settings(max_examples=3000)
@given(
    st.one_of(TEXTS, st.lists(st.one_of(st.sampled_from(SOME_WORDS), TEXTS)).map(" ".join)),
    st.integers(0, 40),
    WORDS_SET,
    WORDS_SET,
)
def test_text_words_equal_the_regex_twin(
    text: str, limit: int, stopwords: frozenset[str], negators: frozenset[str]
) -> None:
    """Any text; first words repeated, cut off by the limit or not; stopwords and
    negators among the words or not, any length, the empty word too."""
    assert _native.text_words(text, limit, stopwords, negators) == records.text_words(
        text, limit, stopwords, negators
    )


def test_text_words_takes_the_sets_members_as_text_only() -> None:
    """A member that is no str equals no word, as in the twin; a str subclass does."""

    class Word(str):
        pass

    negators = frozenset({1, None, Word("no")})
    assert _native.text_words("say no", 32, frozenset(), negators) == records.text_words(
        "say no", 32, frozenset(), negators
    )
    assert _native.text_words("say no", 32, frozenset(), negators)[3] is True
    assert _native.text_words("say no", 32, {"say"}, {"no"}) == (
        "say no",
        ("say", "no"),
        ("no",),
        True,
    )


def test_text_words_refuses_what_it_cannot_read() -> None:
    with pytest.raises(TypeError):
        _native.text_words(1, 32, frozenset(), frozenset())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _native.text_words("a", 32, ["a"], frozenset())  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        _native.text_words("a", -1, frozenset(), frozenset())


def test_canonical_words_are_the_words_scanned_in_order() -> None:
    """`TextFacts.canonical_words`, made from the canonical form on first use, are the
    words the scan found (a word holds no space), and are made once."""
    text = "The U.S. paid 4,000 — not 5%: e.g. km² (−3.5), 2019-20 ɑ"
    facts = records.text_facts(text)
    assert facts.canonical_words == tuple(records.scan_words(records.folded_form(text)))
    assert facts.canonical_words is facts.canonical_words
    assert records.text_facts("").canonical_words == ()
    assert records.text_facts("—").canonical_words == ()


NEGATORS_AND_PLAIN = st.frozensets(st.sampled_from(["no", "not", "t", "a", "the", "é", "1"]))


@settings(max_examples=3000)
@given(
    st.one_of(TEXTS, st.lists(st.sampled_from(["no", "No", "5", "²", "t", "é"])).map(" ".join)),
    NEGATORS_AND_PLAIN,
    NEGATORS_AND_PLAIN,
)
def test_sentence_words_equal_the_python_twin(
    text: str, not_content: frozenset[str], negators: frozenset[str]
) -> None:
    """Any text; "no" before a digit, a superscript digit (a digit, not a decimal), or a
    word; one-character words; words in either set or both."""
    assert _native.sentence_words(text, not_content, negators) == statements.sentence_words(
        text, not_content, negators
    )


@settings(max_examples=3000)
@given(TEXTS)
def test_split_count_equals_len_split(text: str) -> None:
    assert _native.split_count(text) == len(text.split())


def test_every_code_point_is_classified_as_the_regexes_classify_it() -> None:
    """Each code point (lone surrogates too: a text may hold one) as a digit run's
    neighbour, a thousands group, an acronym letter, a signed number's digit, a
    word's neighbour, a separator; and the canonical form and first words made of them."""
    for first, text in _every_code_point_in(
        "{c}1,{c}00 a.{c}.b -{c}5 x{c}y 1{c}000 {c}{c}.{c} +{c}"
    ):
        assert _native.words(text) == records.scan_words(text), hex(first)
        assert _native.split_count(text) == len(text.split()), hex(first)
        stop, negators = records.STOPWORDS, records.NEGATORS
        assert _native.text_words(text, 32, stop, negators) == records.text_words(
            text, 32, stop, negators
        ), hex(first)


SENTENCE_CHARACTERS = st.sampled_from(
    [*"aZé.!?\"')] (['\u201c\u2018\u201d\u2019 \t\n\u2028", "Mr", "U.S", "No", "ǅ", "ª", "K"]
)


@settings(max_examples=3000)
@given(st.one_of(st.lists(SENTENCE_CHARACTERS, max_size=30).map("".join), st.text(max_size=60)))
def test_sentence_bounds_equal_the_regex_twin(text: str) -> None:
    assert _native.sentence_bounds(text, units._ABBREVIATIONS) == units.sentence_bounds(text)


def test_every_code_point_is_classified_as_the_sentence_rules_classify_it() -> None:
    """Each code point after a period (a word of an abbreviation?), before a capital (a
    sentence end?), as a closer, an opener, a space."""
    for first, text in _every_code_point_in("Ab{c}. Cd. {c}E x.{c} F! {c}G? ({c}H {c}. I{c}"):
        assert _native.sentence_bounds(text, units._ABBREVIATIONS) == units.sentence_bounds(text), (
            hex(first)
        )


@settings(max_examples=3000)
@given(
    st.one_of(TEXTS, st.lists(st.text(max_size=40), max_size=12).map(" ".join)),
    st.integers(1, 10),
    st.sampled_from([16, 64, 100]),
)
def test_minhash_equals_the_python_twin(text: str, shingle_words: int, size: int) -> None:
    """Any Unicode, whitespace of every kind between words, shingles longer than a
    SHA-1 block (64 bytes)."""
    perms = sketch.permutations(size)
    assert _native.minhash(text, shingle_words, perms.packed) == sketch.minhash(
        text, shingle_words, perms
    )


def test_minhash_refuses_what_the_twin_refuses() -> None:
    """A lone surrogate cannot be UTF-8: both raise, as encoding it does."""
    perms = sketch.permutations(16)
    for run in (_native.minhash, lambda t, n, p: sketch.minhash(t, n, perms)):
        with pytest.raises(UnicodeEncodeError):
            run("a \ud800 b", 3, perms.packed)


PAIR_WORDS = st.one_of(
    st.sampled_from(["a", "b", "c", "the"]), st.integers(-3, 3), st.text(max_size=2)
)
"""Words for the pair search, ints among them: -1 and -2 share a hash, so unequal words
with equal hashes are met (a record's words are strs; the kernel reads any hashable)."""
PAIR_RECORDS = st.lists(
    st.tuples(
        st.lists(PAIR_WORDS, max_size=10).map(tuple),  # a word twice in one record too
        st.one_of(st.integers(0, 6), st.floats(0, 6), st.just(float("nan"))),
        st.sampled_from(["d1", "d2", "".join(["d", "2"]), "d3"]),  # equal ids made apart
    ),
    max_size=14,
)


@settings(max_examples=3000)
@given(PAIR_RECORDS, st.integers(-1, 15))
def test_sharing_pairs_equal_the_python_twin(rows: list[tuple], widest: int) -> None:
    """Any `widest`: every word counted (the records or more), or only the rarer ones."""
    words = [w for w, _, _ in rows]
    needed = [n for _, n, _ in rows]
    docs = [d for _, _, d in rows]
    assert _native.sharing_pairs(words, needed, docs, widest) == reprint_pairs.pairwise(
        words, needed, docs, widest
    )


@settings(max_examples=3000)
@given(st.lists(PAIR_WORDS, max_size=12), st.lists(PAIR_WORDS, max_size=12), st.booleans())
def test_shared_words_equal_the_python_twin(a: list, b: list, as_tuples: bool) -> None:
    """Repeats counted as often as both sides hold them; -1 and -2 share a hash."""
    first, second = (tuple(a), tuple(b)) if as_tuples else (a, b)
    assert _native.shared_words(first, second) == reprints.shared_words(a, b)


ALIGNED_WORDS = st.one_of(st.sampled_from(["a", "b", "c"]), st.integers(-2, -1))
"""Few words, so runs of equal words are long and many; -1 and -2 share a hash."""


@settings(max_examples=3000)
@given(
    st.lists(ALIGNED_WORDS, max_size=30),
    st.lists(ALIGNED_WORDS, max_size=30),
    st.booleans(),
)
def test_alignment_equals_difflib(a: list, b: list, as_tuples: bool) -> None:
    first, second = (tuple(a), tuple(b)) if as_tuples else (a, b)
    assert _native.alignment(first, second) == reprints.alignment(a, b)


@settings(max_examples=300)
@given(st.lists(TEXTS, min_size=2, max_size=2))
def test_alignment_of_texts_words_equals_difflib(texts: list[str]) -> None:
    """Canonical words of any text, and of the text after a change to it."""
    a, b = (records.canonical_words(t) for t in texts)
    edited = b[: len(b) // 2] + a
    for x, y in ((a, b), (a, edited), (edited, a)):
        assert _native.alignment(x, y) == reprints.alignment(x, y)


def test_alignment_refuses_what_it_cannot_read() -> None:
    with pytest.raises(TypeError):
        _native.alignment({"a"}, ["a"])
    with pytest.raises(TypeError):
        _native.alignment(["a"], [["a"]])
    with pytest.raises(TypeError):
        _native.alignment(["a"])


def test_shared_words_refuses_what_it_cannot_read() -> None:
    with pytest.raises(TypeError):
        _native.shared_words({"a"}, ["a"])
    with pytest.raises(TypeError):
        _native.shared_words(["a"], [["a"]])
    with pytest.raises(TypeError):
        _native.shared_words([["a"]], [])
    with pytest.raises(TypeError):
        _native.shared_words(["a"])


@settings(max_examples=2000)
@given(
    st.frozensets(PAIR_WORDS, max_size=8),
    st.lists(st.lists(PAIR_WORDS, max_size=8).map(tuple), max_size=8),
)
def test_word_postings_equal_the_python_twin(sought: frozenset, texts: list[tuple]) -> None:
    """A word twice in a text is listed once; -1 and -2 share a hash."""
    assert _native.word_postings(sought, texts) == polarity.word_postings(sought, texts)


def test_word_postings_refuses_what_it_cannot_read() -> None:
    with pytest.raises(TypeError):
        _native.word_postings(["a"], [("a",)])
    with pytest.raises(TypeError):
        _native.word_postings({"a"}, [["a"]])
    with pytest.raises(TypeError):
        _native.word_postings({"a"}, [(["a"],)])
    with pytest.raises(TypeError):
        _native.word_postings({"a"}, (("a",),))


def test_sharing_pairs_refuses_what_it_cannot_read() -> None:
    """Lists of unequal lengths, a record's words not a tuple, an unhashable word, a
    need or a width that is no number."""
    with pytest.raises(ValueError):
        _native.sharing_pairs([("a",)], [2, 2], ["d"], 1)
    with pytest.raises(TypeError):
        _native.sharing_pairs([["a"]], [2], ["d"], 1)
    with pytest.raises(TypeError):
        _native.sharing_pairs([([],)], [2], ["d"], 1)
    with pytest.raises(TypeError):
        _native.sharing_pairs([("a",)], ["2"], ["d"], 1)
    with pytest.raises(TypeError):
        _native.sharing_pairs([("a",)], [2], ["d"], 1.0)
    with pytest.raises(TypeError):
        _native.sharing_pairs([("a",)], [2], ["d"])


TERM_CHARACTERS = st.sampled_from([*"abé\xff", "\u0100", "一", "😀"])
TERMS = st.frozensets(st.text(TERM_CHARACTERS, max_size=4), max_size=8)
"""Terms of one, two and four bytes a character, empty and one-character ones among them."""


@settings(max_examples=3000)
@given(TERMS, st.one_of(st.text(TERM_CHARACTERS, max_size=40), TEXTS))
def test_contained_equals_the_python_twin(terms: frozenset[str], text: str) -> None:
    assert _native.contained(terms, text) == records.contained(terms, text)


@settings(max_examples=500)
@given(
    st.frozensets(st.text(st.sampled_from("abcde é"), min_size=2, max_size=5), max_size=120),
    st.lists(st.one_of(st.text(st.sampled_from("abcde é"), max_size=300), TEXTS), max_size=4),
)
def test_terms_made_ready_find_what_the_python_twin_finds(
    terms: frozenset[str], texts: list[str]
) -> None:
    """Many terms over few letters (terms share a pair, pairs share a chain), sought in
    several texts with one search, and one text at a time."""
    search = _native.Terms(terms)
    for text in texts:
        expected = records.TermSearch(terms).found_in(text)
        assert search.found_in(text) == expected == _native.contained(terms, text)


def test_contained_finds_every_term_where_it_stands() -> None:
    """Terms sharing their first two letters, one at the text's very end, one longer than
    what is left, a term twice; and a term that is not a str refused as `in` refuses it."""
    terms = frozenset({"abc", "abd", "ab", "cd", "dx", "bcdx"})
    assert _native.contained(terms, "xabcabcd") == {"abc", "ab", "cd"}
    with pytest.raises(TypeError):
        _native.contained(frozenset({1}), "text")
    with pytest.raises(TypeError):
        records.contained(frozenset({1}), "text")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _native.Terms(frozenset({1}))
    with pytest.raises(TypeError):
        _native.Terms(["a"])
    with pytest.raises(TypeError):
        _native.Terms(frozenset({"a"})).found_in(b"a")


CASED_WORDS = st.sampled_from(
    ["Sam", "sam", "The", "the", "A", "a", "ÉCOLE", "ǅungla", "İlker", "ß", "Ω", "ω", "1990", "_X",
     "\u2160x", "x", "Of", "of", "\U0001d400b", ""]
)  # fmt: skip
"""Words a capital run turns on: upper case first or not, one character or more, titlecase
ǅ (no upper case), a Roman numeral (a letter number), a mathematical capital, stopwords
written either way, the empty word."""


@settings(max_examples=3000)
@given(st.lists(CASED_WORDS, max_size=20), st.integers(-1, 1), st.sampled_from("ltj"))
def test_capital_runs_equal_the_python_twin(cased: list, misalign: int, form: str) -> None:
    """Folded as written (stopwords then drop out), or one word more or fewer than the
    cased words (no run at all); as lists, tuples, or the folded words joined by spaces
    (an empty word among them splits as `str.split(" ")` splits it)."""
    words = [w.lower() for w in cased]
    if misalign > 0:
        words = [*words, "x"]
    elif misalign < 0:
        words = words[:-1]
    first, second = {
        "l": (cased, words), "t": (tuple(cased), tuple(words)), "j": (cased, " ".join(words))
    }[form]  # fmt: skip
    stop = records.STOPWORDS
    assert _native.capital_runs(first, second, stop) == typed_claims.capital_runs(
        first, second, stop
    )


@settings(max_examples=2000)
@given(TEXTS)
def test_capital_runs_of_a_cased_text_equal_the_python_twin(text: str) -> None:
    """Given the cased text rather than its words, and the canonical form rather than
    the folded words: the runs of the words' lists."""
    cased = records.folded_form(text, fold=False)
    words = records.canonical_words(text)
    joined = records.text_facts(text).canonical
    stop = records.STOPWORDS
    expected = typed_claims.capital_runs(records.scan_words(cased), words, stop)
    assert typed_claims.capital_runs(cased, joined, stop) == expected
    assert _native.capital_runs(cased, words, stop) == expected
    assert _native.capital_runs(cased, joined, stop) == expected


def test_capital_runs_of_every_code_point_equal_the_python_twin() -> None:
    """Every code point opening a two-character word: upper case as `str.isupper` reads it."""
    for first, text in _every_code_point_in("{c}x"):
        cased = text.split("|")
        words = [f"w{i}" for i in range(len(cased))]
        assert _native.capital_runs(cased, words, frozenset()) == typed_claims.capital_runs(
            cased, words, frozenset()
        ), first


def test_capital_runs_refuse_what_they_cannot_read() -> None:
    with pytest.raises(TypeError):
        _native.capital_runs(["Sam"], ["sam"], ["the"])
    with pytest.raises(TypeError):
        _native.capital_runs(["Sam", 1], ["sam", "x"], frozenset())
    with pytest.raises(TypeError):
        _native.capital_runs(3, [], frozenset())
    with pytest.raises(TypeError):
        _native.capital_runs(["Sam"], ["sam"])
    with pytest.raises(TypeError):
        _native.capital_runs("Sam", [1], frozenset())
    with pytest.raises(TypeError):
        _native.capital_runs("Sam", b"sam", frozenset())


def test_the_kernel_symbols_are_the_canonical_symbols() -> None:
    assert _native.SYMBOLS == records.SYMBOLS


def test_packing_uses_the_kernels() -> None:
    """The install built them (a C compiler is present wherever the suite runs), and
    `packer.records` took them: without, packing is right but slower, unnoticed."""
    assert kernels is _native


def test_packing_without_the_kernels_gives_the_same_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no C compiler was present, the twins run: the golden prompt and manifest
    come out byte for byte."""
    monkeypatch.setattr(records, "kernels", None)
    monkeypatch.setattr(records, "_scan", records.scan_words)
    monkeypatch.setattr(records, "_text_words", records.text_words)
    monkeypatch.setattr(statements, "_sentence_words", statements.sentence_words)
    monkeypatch.setattr(units, "kernels", None)
    monkeypatch.setattr(sketch, "kernels", None)
    monkeypatch.setattr(reprint_pairs, "_sharing", reprint_pairs.shared_openings)
    monkeypatch.setattr(reprints, "_shared_words", reprints.shared_words)
    monkeypatch.setattr(reprints, "_alignment", reprints.alignment)
    monkeypatch.setattr(packet, "terms_in", records.contained)
    monkeypatch.setattr(answers, "terms_in", records.contained)
    monkeypatch.setattr(packet, "term_search", records.TermSearch)
    monkeypatch.setattr(polarity, "term_search", records.TermSearch)
    monkeypatch.setattr(polarity, "_word_postings", polarity.word_postings)
    monkeypatch.setattr(typed_claims, "_capital_runs", typed_claims.capital_runs)
    result = golden._pack()  # a new runtime: no memo of the kernels' results
    prompt = "\n\n".join(f"### {m.role}\n{m.content}" for m in result.prompt.messages) + "\n"
    assert prompt == (golden.GOLDEN / "prompt.txt").read_text()
    assert golden._manifest_json(result) == (golden.GOLDEN / "manifest.json").read_text()
