"""The exact-duplicate key and the word count behind the token lower bound."""

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from packer.records import normalize_text, word_count
from tests.test_packer_properties import TOKENS

# Whitespace of every kind, case pairs, compatibility forms and plain text.
tricky = st.text(
    st.sampled_from(list("aB .\t\n\r\x0b\x0c\x1c\x85\xa0\u2003\u3000ßİﬁ¨½́")) | st.characters(),
    max_size=40,
)


@given(text=tricky)
def test_normalize_is_nfkc_casefold_and_collapsed_whitespace(text):
    expected = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    assert normalize_text(text) == expected


@given(text=tricky)
def test_word_count_never_exceeds_the_tokens(text):
    n = word_count(text, normalize_text(text))
    assert n == len(text.split())
    assert n <= len(TOKENS.encoding.encode_ordinary(text))
