"""The exact-duplicate key and the word count behind the token lower bound."""

import re
import unicodedata

from hypothesis import assume, given
from hypothesis import strategies as st

from packer import records
from packer.records import canonical_words, fold_case, word_count
from tests.test_packer_meaning import SUPER_OR_SUB
from tests.test_packer_properties import RUNTIME

KEPT = frozenset(SUPER_OR_SUB) | {"\u2212"}

# Whitespace of every kind, case pairs, compatibility forms and plain text.
tricky = st.text(
    st.sampled_from(list("aB .\t\n\r\x0b\x0c\x1c\x85\xa0\u2003\u3000ßİﬁ¨½́")) | st.characters(),
    max_size=40,
)


@given(text=tricky.filter(lambda t: not any(c in KEPT for c in t)))
def test_fold_case_is_nfkc_casefold_but_for_superscripts_and_the_minus_sign(text):
    assert fold_case(text) == unicodedata.normalize("NFKC", text).casefold()


@given(text=tricky)
def test_canonical_words_are_case_and_whitespace_blind(text):
    """Outside a dateline: capitals are what mark one ("AA- 0" opens with one, "Aa- 0" not)."""
    upper = " ".join(text.upper().split())
    assume(records._WIRE_PREFIX.match(text) is None and records._WIRE_PREFIX.match(upper) is None)
    assert canonical_words(text) == canonical_words(upper)


def test_a_dateline_is_told_by_its_capitals():
    assert canonical_words("AA- 0") == ["0"]
    assert canonical_words("Aa- 0") == ["aa", "0"]


@given(text=tricky)
def test_word_count_never_exceeds_the_tokens(text):
    n = word_count(text)
    assert n == len(text.split())
    assert n <= len(RUNTIME.tokens.encoding.encode_ordinary(text))


# The canonical form's patterns as first written, look-behind first: the literal-first
# ones `packer.records` uses (ten times faster) must match exactly where these do.
LOOK_BEHIND_FIRST = {
    "_THOUSANDS": r"(?<=\d),(?=\d{3}(?!\d))",
    "_ACRONYM_DOT": r"(?<=\b[^\W\d_])\.(?=[^\W\d_]\b)",
    "_WORD": rf"\d+(?:\.\d+)*|\w+|[{records.SYMBOLS}]|(?<![\w.])[-+]\d+(?:\.\d+)*",
}
# Digits, separators, signs, letters of several scripts, symbols: where the patterns cut.
punctuated = st.text(
    st.sampled_from(list("0123456789,.-+ aZé_ßΩ²٣%$€U.S.\n")) | st.characters(), max_size=60
)


@given(text=punctuated)
def test_literal_first_patterns_match_where_the_look_behind_first_ones_do(text):
    for name, pattern in LOOK_BEHIND_FIRST.items():
        reference = re.compile(pattern)
        fast = getattr(records, name)
        assert [m.span() for m in fast.finditer(text)] == [
            m.span() for m in reference.finditer(text)
        ], name


def test_no_character_is_both_a_letter_and_a_digit():
    """`_looks_factual` skips the digit search in a word of letters only."""
    both = [c for c in map(chr, range(0x110000)) if c.isalpha() and c.isdigit()]
    assert both == []


@given(st.text(st.sampled_from(list("aZ1²٣½$ ")) | st.characters(), min_size=1, max_size=8))
def test_a_word_looks_factual_when_capitalized_a_symbol_or_with_a_digit(word):
    expected = word[0].isupper() or word[0] in records.SYMBOLS or any(c.isdigit() for c in word)
    assert records._looks_factual(word) == expected
