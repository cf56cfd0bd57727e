"""The native pre-tokenizer counts exactly as tiktoken does (packer/_pretokenize.c)."""

import pytest
import regex
import tiktoken
from hypothesis import given
from hypothesis import strategies as st

from packer import _pretokenize, tokens
from packer._pretokenize_table import BLOCK, DOUBT, HEADER, character_class, header
from packer.tokens import PieceCounts, TokenCounter, load_encoding

ENCODING = load_encoding("cl100k_base")
COUNTS = PieceCounts.of(ENCODING)
assert COUNTS is not None
RANKS = COUNTS._ranks
SPLIT = regex.compile(ENCODING._pat_str)

FRAGMENTS = st.one_of(
    st.text(st.characters(codec=None), max_size=12),  # every category, surrogates too
    st.text(st.characters(categories=["Mn", "Mc", "Me"]), max_size=4),  # combining marks
    st.sampled_from(["👨\u200d👩\u200d👧", "👍🏽", "🏳️\u200d🌈", "\u200d", "\ufe0f", "🇫🇷"]),
    st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), min_size=1, max_size=6),
    st.text(st.characters(categories=["Nd", "Nl", "No"]), min_size=1, max_size=9),
    st.text(st.sampled_from(" \t\r\n\x0b\x0c\x85\xa0\u2028\u3000"), min_size=1, max_size=6),
    st.builds(
        "".join,
        st.lists(st.sampled_from(["'", "’", "s", "S", "d", "D", "m", "M", "t", "T"]), max_size=4),
    ),
    st.sampled_from(["'ll", "'LL", "'Ll", "'lL", "'ve", "'VE", "'Re", "'rE", "'ſ", "n't", "'"]),
    st.sampled_from(["<p>", "</div>\n", "**", "```py\n", "[1](http://x.y/z?a=1&b=2)", "&amp;"]),
    st.from_regex(r"[A-Za-z]{1,8}", fullmatch=True),
    st.text(st.characters(min_codepoint=0x30000), min_size=1, max_size=4),  # newest planes
    st.sampled_from(["\U0003d000", "\U00031350", "\U0001e5d0", "\U00011f00", "\u0c5d"]),
)
TEXTS = st.lists(FRAGMENTS, max_size=12).map("".join)


def tiktoken_count(text: str) -> int:
    return len(ENCODING.encode_ordinary(text))


@given(TEXTS)
def test_counts_equal_tiktoken_s_over_fuzzed_unicode(text: str) -> None:
    counter = TokenCounter(ENCODING, "cl100k_base")
    assert counter.count(text) == tiktoken_count(text)
    assert counter.count(text + text) == tiktoken_count(text + text)  # the memo's pieces


def repaired(text: str) -> str:
    """tiktoken's own repair of a text holding surrogates (the scanner refuses them)."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def doubtless(text: str) -> str:
    """`text` without its code points of class DOUBT (the C scanner refuses them)."""
    return "".join(c for c in text if character_class(ord(c)) != DOUBT)


@given(TEXTS.map(repaired).map(doubtless))
def test_pieces_are_tiktoken_s_split(text: str) -> None:
    assert _pretokenize.pieces(text) == SPLIT.findall(text)


def test_a_code_point_newer_than_tiktoken_s_unicode_counts_as_tiktoken_counts_it() -> None:
    """U+3D000 (CJK extension J) is a letter to the `regex` package's Unicode, not yet to
    tiktoken's: counting it as a letter made 5 tokens of this text where tiktoken makes 6."""
    text = "\U0003d000/A"
    assert character_class(0x3D000) == DOUBT
    assert COUNTS.fresh().count(text) == tiktoken_count(text) == 6
    assert TokenCounter(ENCODING, "cl100k_base").count(text * 40) == tiktoken_count(text * 40)


def test_every_code_point_counts_as_tiktoken_counts_it() -> None:
    """Each code point but the surrogates, where its class decides the split: the C scanner's
    count is tiktoken's for each one the table classes, and each one of class DOUBT is
    refused by the scanner (`Doubt`), so `PieceCounts` asks tiktoken itself."""
    memo, encode = _pretokenize.Memo(), ENCODING._core_bpe.encode_ordinary
    codes = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    sure, wrong, accepted = [], [], []
    for code in codes:
        (sure if character_class(code) != DOUBT else accepted).append(chr(code))
    for char in sure:
        for text in (f"A{char}/A", f"1{char} x"):
            if _pretokenize.count(text, memo, RANKS) != len(encode(text)):
                wrong.append(text)
    assert wrong == []
    assert len(accepted) < 30_000  # those assigned since Python's Unicode, few in real text
    for char in accepted:
        try:
            _pretokenize.count(f"A{char}/A", memo, RANKS)
        except _pretokenize.Doubt:
            continue
        wrong.append(char)
    assert wrong == []
    assert all(character_class(c) != DOUBT for c in range(256))  # a Latin-1 text is not read


def test_every_class_of_every_block_counts_as_tiktoken_counts_it() -> None:
    """The first and last code point of each character class in each block of the table,
    in the contexts where the classes decide the split."""
    wrong = []
    for start in range(0, 0x110000, BLOCK):
        seen: dict[int, list[int]] = {}
        for code in range(start, start + BLOCK):
            if not 0xD800 <= code < 0xE000:
                seen.setdefault(character_class(code), []).append(code)
        for codes in seen.values():
            for char in {chr(codes[0]), chr(codes[-1])}:
                for text in (f"a{char}a", f" {char}1", f"'{char}", f"{char} x", f"1{char}\n"):
                    if COUNTS.fresh().count(text) != tiktoken_count(text):
                        wrong.append(text)
    assert wrong == []


def test_the_committed_table_is_the_generator_s() -> None:
    assert HEADER.read_text(encoding="utf-8") == header()


def test_surrogates_are_repaired_as_tiktoken_repairs_them() -> None:
    counter = COUNTS.fresh()
    for text in ("a\ud800b", "x \ud83d\ude00 y", "\udfff", "\ud800\U0003d000/A"):  # last: DOUBT
        assert counter.count(text) == tiktoken_count(text)


def test_a_full_memo_is_emptied_and_counts_stay_exact(monkeypatch) -> None:
    monkeypatch.setattr(tokens, "PIECE_MEMO", 3)
    counter = COUNTS.fresh()
    text = "one two three four five six, seven 12345 eight's"
    assert [counter.count(text) for _ in range(3)] == [tiktoken_count(text)] * 3
    assert len(counter._memo) <= 3 + len(_pretokenize.pieces(text))


def test_an_encoding_with_another_split_pattern_is_counted_by_tiktoken() -> None:
    other = tiktoken.Encoding(
        "words", pat_str=r"\S+|\s+", mergeable_ranks=ENCODING._mergeable_ranks, special_tokens={}
    )
    assert PieceCounts.of(other) is None
    assert PieceCounts.of(ENCODING) is not None
    text = "it's  two words"
    assert TokenCounter(other, "words").count(text) == len(other.encode_ordinary(text))


def test_a_tiktoken_without_its_merge_ranks_counts_alone() -> None:
    """A new piece is encoded over the encoding's `_mergeable_ranks`, which are not
    public API: a tiktoken without them counts every text itself, never fails to load."""

    class Without:
        _pat_str = ENCODING._pat_str

        def encode_ordinary(self, text: str) -> list[int]:
            return ENCODING.encode_ordinary(text)

    assert PieceCounts.of(Without()) is None  # type: ignore[arg-type]
    text = "it's two words"
    assert TokenCounter(Without(), "cl100k_base").count(text) == len(  # type: ignore[arg-type]
        ENCODING.encode_ordinary(text)
    )


SURE_TEXTS = TEXTS.map(repaired).map(doubtless)


def piece_sum(text: str) -> int:
    """tiktoken's own encoding of each of the C scanner's pieces, added up."""
    return sum(len(ENCODING._encode_single_piece(p.encode())) for p in _pretokenize.pieces(text))


LONG_PIECES = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs", "Cn"]), max_size=80
).map(doubtless)


@given(st.one_of(SURE_TEXTS, LONG_PIECES, st.from_regex(r"[a-z]{20,90}", fullmatch=True)))
def test_the_byte_pair_encoding_in_c_counts_as_tiktoken_s(text: str) -> None:
    """Each piece new to the memo is counted by the C byte pair encoding: as many tokens as
    tiktoken's own encoder makes of that piece (long pieces: many merge steps)."""
    assert _pretokenize.count(text, _pretokenize.Memo(), RANKS) == piece_sum(text)


@given(st.lists(SURE_TEXTS, max_size=12))
def test_the_piece_memo_keeps_one_entry_per_piece(texts: list[str]) -> None:
    """The C table keeps each distinct piece once, whatever kind of str it is read from (a
    Latin-1 piece inside a wider text is the same entry), and sums its pieces' counts."""
    memo = _pretokenize.Memo()
    for text in texts:
        assert _pretokenize.count(text, memo, RANKS) == piece_sum(text)
        assert _pretokenize.count(text, memo, RANKS) == piece_sum(text)  # from the memo
    distinct = {p for text in texts for p in _pretokenize.pieces(text)}
    assert len(memo) == len(distinct)
    wider = "".join(texts) + " \u2603"  # a wider str than most pieces were read from
    assert _pretokenize.count(wider, memo, RANKS) == piece_sum(wider)
    assert len(memo) == len(distinct | set(_pretokenize.pieces(wider)))
    memo.clear()
    assert len(memo) == 0


def test_many_pieces_grow_the_memo_and_stay_found() -> None:
    memo, text = _pretokenize.Memo(), " ".join(f"w{k}" for k in range(5000))
    assert _pretokenize.count(text, memo, RANKS) == tiktoken_count(text)
    assert len(memo) == len(set(_pretokenize.pieces(text)))
    assert _pretokenize.count(text, memo, RANKS) == tiktoken_count(text)


def test_ranks_refuse_what_is_no_table_of_ranks() -> None:
    for bad in ({"a": 1}, {b"a": "1"}, {b"a": -1}):
        with pytest.raises((TypeError, ValueError)):
            _pretokenize.Ranks(bad)
