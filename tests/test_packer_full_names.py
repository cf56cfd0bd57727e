"""The answer's name in full: a "who" question whose packet names someone only by surname
gets the passage giving the whole name (`packer.full_names`, `first.name_in_full`)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packer import Catalog, PackerRuntime, pack_request
from packer.full_names import SCANNED, names_in, shortened_name
from packer.question import read_question
from packer.records import Evidence, text_facts
from packer.runtime import Memos
from schemas import PackingConfig
from tests.factories import candidate, document, encoded_prompt_tokens, request
from tests.strategies import hostile_text


def _evidence(c) -> Evidence:
    return Evidence(c, c.document_id, "r1", None, c.text, text_facts(c.text), 0.5, (), None)


QUESTION = (
    "Who is the individual accused by the prosecution of fraud for personal gain, who "
    "also told a trader that withdrawals were fine?"
)
SHORT = [
    "The prosecution painted Bankman-Fried as someone who knowingly committed fraud to "
    "achieve great wealth, power and influence.",
    "Wang testified that he heard Bankman-Fried tell another trader that it was okay to "
    "continue withdrawing money from the account.",
]
FULL = (
    "The highly anticipated criminal trial for Sam Bankman-Fried, former CEO of bankrupt "
    "crypto exchange FTX, started Tuesday to determine whether he is guilty of seven counts "
    "of fraud and conspiracy."
)
FILLER = [
    "The prosecution said the fraud trial would last six weeks, the judge told the jury.",
    "A trader at the firm said personal accounts were closed after the withdrawals.",
]
ASKED = read_question(QUESTION).terms


def test_a_surname_the_packet_repeats_is_sought_in_full():
    records = [_evidence(candidate(f"e{k}", text=t)) for k, t in enumerate([*SHORT, FULL])]
    found = shortened_name(records, SHORT, ASKED, Memos())
    assert found is not None and found.key == "sam bankman fried" and found.carriers == (2,)


def test_no_name_is_sought_once_given_in_full_or_mentioned_once():
    records = [_evidence(candidate(f"e{k}", text=t)) for k, t in enumerate([*SHORT, FULL])]
    assert shortened_name(records, [*SHORT, FULL], ASKED, Memos()) is None
    assert shortened_name(records, SHORT[:1], ASKED, Memos()) is None
    assert shortened_name(records, [], ASKED, Memos()) is None


def test_a_capital_opening_the_text_makes_no_longer_form():
    """ "Unlike FTX" opens its text: the capital is the sentence's, not a first name."""
    shown = ["FTX filed for bankruptcy in 2022.", "Customers of FTX lost billions."]
    opener = "Unlike FTX, which filed for bankruptcy, Binance is still standing."
    records = [_evidence(candidate(f"e{k}", text=t)) for k, t in enumerate([*shown, opener])]
    assert names_in(opener, frozenset(), Memos()) >= {("unlike", "ftx")}
    assert ("unlike", "ftx") not in names_in(opener, frozenset(), Memos(), inner=True)
    assert shortened_name(records, shown, frozenset(), Memos()) is None


def test_a_name_the_question_writes_is_not_sought():
    records = [_evidence(candidate(f"e{k}", text=t)) for k, t in enumerate([*SHORT, FULL])]
    asked = read_question("Who is Bankman-Fried, accused of fraud?").terms
    assert shortened_name(records, SHORT, asked, Memos()) is None


def test_only_the_best_ranked_holders_of_the_short_form_are_read():
    """Thousands of candidates: the longer forms are read from the first `SCANNED` that
    hold the short form, so a full name ranked below them is not sought."""
    holders = [f"On day {k} Bankman-Fried spoke." for k in range(SCANNED)]
    texts = [*SHORT, *holders, FULL]
    records = [_evidence(candidate(f"e{k}", text=t)) for k, t in enumerate(texts)]
    assert shortened_name(records, SHORT, ASKED, Memos()) is None
    assert shortened_name([*records[:2], records[-1]], SHORT, ASKED, Memos()) is not None


@pytest.fixture(scope="module")
def runtime() -> PackerRuntime:
    return PackerRuntime.load()


@pytest.mark.parametrize("budget", [90, 100, 110])
def test_the_full_name_passage_goes_in_whole(runtime, budget):
    """The short-form passages rank first and fill the budget; with `enable_full_names`
    the passage giving the full name goes in whole before the fill, never over budget."""
    texts = [*SHORT, *FILLER, FULL]
    cands = [
        candidate(f"e{k}", f"d{k}", text=t, retrieval_score=1.0 - k / 10)
        for k, t in enumerate(texts)
    ]
    docs = [document(c.document_id) for c in cands]

    def shown(on: bool) -> set[str]:
        config = PackingConfig(max_evidence_tokens=budget, enable_full_names=on)
        packed = pack_request(request(*cands, question=QUESTION), Catalog(docs), config, runtime)
        assert packed.manifest.budget.used <= budget
        return {e.evidence_id for e in packed.manifest.evidence if not e.partial}

    assert "e4" in shown(True)
    assert "e4" not in shown(False)


_FILLER = st.sampled_from(
    ["the", "said", "of", "FTX", "Unlike", "İstanbul", "ÉCOLE", "ﬁnance", "Straße", "O'Brien",
     "<b>Sam</b>", "Mr.", "Fried.", "\u200bSam", "1,000", "—", "\n", "[E1]"]
)  # fmt: skip
_PEOPLE = st.sampled_from(
    [("Sam", "Bankman-Fried"), ("Caroline", "Ellison"), ("Élodie", "Straße"), ("İlker", "Ölç")]
)
_VALID = hostile_text.filter(lambda t: not any("\ud800" <= c <= "\udfff" for c in t))


@st.composite
def _naming(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """Shown texts naming a person by surname, and candidates naming them by surname, in
    full, or saying anything at all (markup, controls, long text)."""
    first, last = draw(_PEOPLE)

    def saying(name: str) -> str:
        words = draw(st.lists(_FILLER, max_size=8))
        words.insert(draw(st.integers(0, len(words))), name)
        return " ".join(words)

    shown = [saying(last) for _ in range(draw(st.integers(0, 3)))]
    forms = st.sampled_from([last, f"{first} {last}", f"{first} {last}"])
    texts = [
        saying(draw(forms)) if draw(st.booleans()) else draw(_VALID)
        for _ in range(draw(st.integers(1, 6)))
    ]
    return texts, shown


@given(_naming())
def test_any_text_gives_carriers_among_the_candidates(case):
    """Whatever the passages say, a sought name's carriers are candidates, each once, in
    rank order, each giving it not at the text's start, and no shown text gives it."""
    texts, shown = case
    records = [_evidence(candidate(f"e{k}", text=t)) for k, t in enumerate(texts)]
    memos = Memos()
    found = shortened_name(records, shown, frozenset(), memos)
    if found is not None:
        assert list(found.carriers) == sorted(set(found.carriers))
        full = tuple(found.key.split(" "))
        for i in found.carriers:
            assert any(
                n[len(n) - len(full) :] == full
                for n in names_in(texts[i], frozenset(), memos, inner=True)
            )
        assert all(
            n[len(n) - len(full) :] != full for t in shown for n in names_in(t, frozenset(), memos)
        )


@given(_naming(), st.integers(1, 400))
def test_a_who_request_stays_in_budget_and_loses_no_candidate(runtime, case, budget):
    """Packing a who-question over such passages, at any budget down to one token: the
    ledger holds (the budget, or the floor the notes need), the prompt is the tokens the
    ledger says, and every candidate is packed, folded or excluded with a reason."""
    texts, shown = case
    cands = [
        candidate(f"e{k}", f"d{k}", text=t or "-", retrieval_score=1.0 - k / 20)
        for k, t in enumerate([*shown, *texts])
    ]
    docs = [document(c.document_id) for c in cands]
    config = PackingConfig(max_evidence_tokens=budget)
    packed = pack_request(request(*cands, question=QUESTION), Catalog(docs), config, runtime)
    ledger = packed.manifest.budget
    assert ledger.used <= ledger.available
    exact = encoded_prompt_tokens(runtime.tokens.encoding, packed.prompt.messages)
    assert exact == ledger.prompt_tokens
    accounted = [e.evidence_id for e in packed.manifest.evidence]
    accounted += [f for e in packed.manifest.evidence for f in e.derived_from]
    accounted += [x.evidence_id for x in packed.exclusions]
    assert sorted(accounted) == sorted(c.evidence_id for c in cands)
