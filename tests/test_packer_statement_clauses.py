"""A statement's polarity is its main clause's: a negation scopes over its own clause,
not over a clause joined to it. Each case has a twin that must read the other way."""

import math
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packer.answers import POSITION_SHARE, opposite_sides, positions
from packer.first import PAIR_RANKS
from packer.question import read_question
from packer.records import Evidence, folded_form, scan_words, text_facts
from packer.runtime import Memos
from packer.statements import (
    _CLOSING_NO,
    _NOT_CONTENT,
    NEGATORS,
    _closes_with_no,
    _one_clause,
    clauses,
    main_clause_negated,
    sentence_words,
)
from tests.factories import candidate


def _negated(sentence: str) -> bool:
    [statement] = Memos().statements(sentence).all
    return statement.negated


@pytest.mark.parametrize(
    ("sentence", "negated"),
    [
        # two negations, two clauses: the first says the trial's side
        (
            "A randomized trial found that drinking coffee did not lower the risk markers "
            "of type 2 diabetes: fasting glucose and insulin resistance did not change.",
            True,
        ),
        (
            "A randomized trial found that drinking coffee lowered the risk markers of "
            "type 2 diabetes: fasting glucose and insulin resistance did not change.",
            False,
        ),
        # a negation inside a relative clause is that clause's
        (
            "In the Nurses' Health Study, women who drank four or more cups of coffee a day "
            "had a lower risk of type 2 diabetes than women who drank none.",
            False,
        ),
        (
            "In the Nurses' Health Study, women who drank four or more cups of coffee a day "
            "had no lower risk of type 2 diabetes than women who drank none.",
            True,
        ),
        # an aside set off by commas; a negation scopes over its complement clause
        (
            "Mendelian randomization studies, which use genes that shape coffee intake, "
            "found no evidence that drinking coffee lowers the risk of type 2 diabetes.",
            True,
        ),
        (
            "Mendelian randomization studies, which did not use genes that shape coffee "
            "intake, found evidence that drinking coffee lowers the risk of type 2 diabetes.",
            False,
        ),
        # coordinated clauses: the one carrying the statement
        (
            "The trial did not last long, but it found that coffee lowers the risk of "
            "diabetes in older adults.",
            False,
        ),
        (
            "The trial lasted long, but it found that coffee does not lower the risk of "
            "diabetes in older adults.",
            True,
        ),
        # a subordinate clause opening the sentence
        (
            "Although the cohorts could not rule out other causes, coffee drinkers had a "
            "lower risk of diabetes over twenty years of follow-up.",
            False,
        ),
        (
            "Although the cohorts were large and followed for years, coffee drinkers did not "
            "have a lower risk of diabetes over twenty years of follow-up.",
            True,
        ),
        # one clause: the parity of its negations
        ("It is not guaranteed that the water bottle is free of plastic.", True),
        ("It is not guaranteed that the water bottle is not free of plastic.", False),
        (
            "Coffee does not raise the risk of type 2 diabetes in adults, and it may even "
            "lower it.",
            True,
        ),
        (
            "Coffee raises the risk of type 2 diabetes in adults, and it does not lower it.",
            False,
        ),
    ],
)
def test_a_negation_is_read_in_its_own_clause(sentence, negated):
    assert _negated(sentence) is negated


def test_clauses_split_where_the_clauses_meet():
    folded = folded_form(
        "Studies, which used genes, found no effect; trials agreed, but cohorts did not."
    )
    assert [c.strip(" ,.") for c in clauses(folded)] == [
        "studies, found no effect",
        "trials agreed",
        "but cohorts did not",
        "which used genes",
    ]


def test_a_comma_inside_a_number_or_a_time_splits_no_clause():
    folded = folded_form("Those who paid 4,000 dollars at 10:30, which was late, got none.")
    assert [c.strip(" ,.") for c in clauses(folded)] == [
        "those",
        "who paid 4,000 dollars at 10:30, got none",
        "which was late",
    ]


@given(st.text())
def test_the_clauses_hold_every_word_of_the_sentence_once(text):
    """Whatever the text: the reading returns, and splitting loses or adds no word."""
    folded = folded_form(text)
    assert isinstance(main_clause_negated(folded), bool)
    split = Counter(w for clause in clauses(folded) for w in scan_words(clause))
    assert split == Counter(scan_words(folded))
    for statement in Memos().statements(text).all:
        assert statement.start <= statement.end


@given(st.lists(st.sampled_from(["coffee", "who", "which", "although", ",", ";", "no", "not"])))
def test_a_sentence_without_negation_words_is_never_negated(words):
    folded = folded_form(" ".join(words))
    if NEGATORS.isdisjoint(scan_words(folded)):
        assert main_clause_negated(folded) is False


_SENTENCES = [
    "Coffee does lower the risk.",
    "Coffee does not lower the risk; tea does not either.",
    "Women who drank none had a lower risk than coffee drinkers.",
    "It rained all week in the valley.",
]
_PASSAGES = st.lists(
    st.lists(st.sampled_from(_SENTENCES), min_size=1, max_size=3).map(" ".join)
    | st.text(max_size=60),
    max_size=6,
)


@given(_PASSAGES, st.just("Does coffee lower the risk?") | st.text())
def test_a_position_pair_is_one_pair_whatever_the_text(texts, question):
    """Whatever the passages and the question: at most one pair, of two documents, the
    first among the best ranked."""
    records = [
        Evidence(c, c.document_id, "r1", None, c.text, text_facts(c.text), 0.5, (), None)
        for c in (candidate(f"e{k}", f"d{k}", text=t) for k, t in enumerate(texts))
    ]
    read = positions(records, read_question(question).terms, Memos())
    assert set(read) <= set(range(len(records)))
    found = opposite_sides(records, read, PAIR_RANKS)
    if found is not None:
        i, j = found
        assert i < j and i < PAIR_RANKS and read[i] != read[j]
        assert records[i].document_id != records[j].document_id


@given(
    st.lists(
        st.sampled_from(["no", "n", "o", "No", " ", ".", "\n", "x", "é", "_", "2", "ō"]),
        max_size=12,
    ).map("".join)
)
def test_a_closing_no_is_found_where_the_last_no_stands(folded: str):
    """Trying the closing-`no` pattern at the last "no" alone finds what a search does."""
    expected = _CLOSING_NO.search(folded) is not None
    assert _closes_with_no(folded) is expected


_PIECES = st.sampled_from(
    ["By Nobody —", "NO ONE —", "WASHINGTON (Reuters) -", '"', "“", "”", "No", "no .", "5",
     "not", "never", "don't", "can’t", "Neither", "nor", "x", "é", "ＮＯＴ", "No.", ".", ",",
     ";", "—", "which", "\n", "  ", "U.S.", "?", "!", "It did not last,", "but it held."]
)  # fmt: skip


@given(st.lists(st.one_of(_PIECES, st.text(max_size=4)), max_size=16).map(" ".join))
def test_the_negated_statements_read_alone_are_those_of_all_the_statements(text: str):
    """Only the sentences holding a polarity word are read for the negated statements:
    bylines and datelines stripped, quoted negations, a closing `No` and its number,
    compatibility forms, clauses; any text."""
    memos = Memos()
    assert memos.negated_statements(text) == memos.statements(text).negated


@given(
    st.lists(
        st.sampled_from(["no", "not", "t", "x", " ", ",", ";", ":", "-", "–", "—", "\n", "é",
                         "which", "who", "whom", "although", "though", "since", "while", "if",
                         "because", "unless", "whereas", "but", "and", "ＮＯＴ", "5"]),
        max_size=14,
    ).map("".join)
)  # fmt: skip
def test_a_sentence_of_one_clause_is_negated_by_its_own_count(folded: str):
    """Where the sentence can only be one clause, its own negation count decides, as the
    clause search would."""
    _, negations = sentence_words(folded, _NOT_CONTENT, NEGATORS)
    assert main_clause_negated(folded, negations) is main_clause_negated(folded)
    if _one_clause(folded):
        assert clauses(folded) == [folded]


@given(_PASSAGES, st.just("Does coffee lower the risk?") | st.text())
def test_positions_read_only_passages_holding_the_terms_read_as_every_passage(texts, question):
    """Passages holding too few of the question's terms in their canonical form are not
    read: the positions are those of reading every passage's statements."""
    records = [
        Evidence(c, c.document_id, "r1", None, c.text, text_facts(c.text), 0.5, (), None)
        for c in (candidate(f"e{k}", f"d{k}", text=t) for k, t in enumerate(texts))
    ]
    terms = read_question(question).terms
    memos = Memos()
    need = max(3, math.ceil(POSITION_SHARE * len(terms)))
    every = {}
    for k, record in enumerate(records):
        held = [(len(s.content & terms), s.negated) for s in memos.statements(record.text).all]
        most = max((h for h, _ in held), default=0)
        taken = {negated for h, negated in held if h == most}
        if most >= need and len(taken) == 1:
            every[k] = taken.pop()
    assert positions(records, terms, memos) == every
