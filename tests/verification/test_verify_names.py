"""`names_supported`: a capitalised name no source writes is flagged, as its own check, and
only gates with `--gate_names`; what is no new name (a sentence's first word, titles,
months, demonyms, possessives, aliases and acronyms the packet gives) is not flagged;
and `--citation_span paragraph` lets a paragraph's citation cover its sentences."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packer.verification.checks import CheckSettings, GivenPacket, verify_answer
from packer.verification.names import missing_names, sentence_names, source_names

BLOCK = (
    "Harbour Records signed the Norwegian band Nordlys in 1998. Its founder, Ingrid "
    "Solberg, moved the label from Bergen to London. The United Kingdom (UK) office is run "
    "by the label's Canadian partner, the Bank of Montreal, and the French distributor "
    "Disques Lumière. The National Aeronautics and Space Administration's Goddard Space "
    "Flight Center licensed one song for a U.S. tour."
)


def _names(answer: str, *blocks: str, question: str = "", **settings: object) -> list[str]:
    packet = GivenPacket("q", {f"E{i}": b for i, b in enumerate(blocks, 1)}, given=question)
    verdict = verify_answer(answer, packet, settings=CheckSettings(**settings))  # type: ignore[arg-type]
    check = next(c for c in verdict.checks if c.name == "names_supported")
    return check.offending


@pytest.mark.parametrize(
    "answer",
    [
        "Harbour Records signed Nordlys in 1998 [E1].",
        "The band was signed by Solberg's label [E1].",  # a possessive, an alias (surname)
        "Ingrid Solberg moved it from Bergen to London [E1].",
        "In September, President Solberg opened the UK office [E1].",  # title, month
        "The band came from Norway's west coast, and the label from Montreal [E1].",
        "A partner from Canada and a distributor in France joined [E1].",  # demonyms
        "The Norway-born band stayed with the label [E1].",
        "Its office in the U.S. and the United Kingdom is small [E1].",
        "NASA and the Goddard Space Flight Center licensed a song [E1].",
        "The United States tour and the Bank of Montreal (BoM) deal came later [E1].",
        'The label called it "The Northern Lights Of Bergen" [E1].',  # quoted: the quote's
        "However, Dr. Solberg said on Monday that it was fine [E1].",
        "Die Plattenfirma Harbour Records unterschrieb den Vertrag mit der Band [E1].",
    ],
)
def test_names_the_packet_gives_are_no_new_names(answer: str) -> None:
    assert _names(answer, BLOCK) == []


@pytest.mark.parametrize(
    ("answer", "new"),
    [
        ("Harbour Records signed Nordlys and Aurora Sky in 1998 [E1].", ["Aurora Sky"]),
        ("Its founder moved the label from Bergen to Stockholm [E1].", ["Stockholm"]),
        ("The label is owned by Universal Music Group [E1].", ["Universal Music Group"]),
        ("The Bank of Montreal and Deutsche Telekom are partners [E1].", ["Deutsche Telekom"]),
        ("The Spanish distributor sells it [E1].", ["Spanish"]),
        ("Ingrid Solberg and Bjork Hansen founded it [E1].", ["Bjork Hansen"]),
    ],
)
def test_a_name_no_source_writes_is_flagged(answer: str, new: list[str]) -> None:
    assert _names(answer, BLOCK) == new


def test_citation_scope_reads_the_cited_block_and_packet_scope_every_block() -> None:
    other = "The band toured Japan and Korea in 2001."
    answer = "Nordlys toured Japan [E1]."
    assert _names(answer, BLOCK, other) == ["Japan"]
    assert _names("Nordlys toured Japan.", BLOCK, other, scope="packet") == []
    assert _names("Nordlys toured Brazil.", BLOCK, other, scope="packet") == ["Brazil"]


def test_the_question_gives_names() -> None:
    question = "Did Harbour Records ever work with Sony?"
    assert _names("No, it never worked with Sony [E1].", BLOCK, question=question) == []
    assert _names("No, it never worked with Sony [E1].", BLOCK) == ["Sony"]


def test_names_are_reported_and_gate_only_when_asked() -> None:
    packet = GivenPacket("q", {"E1": BLOCK})
    answer = "Harbour Records was founded by Ingrid Solberg in Stockholm [E1]."
    reported = verify_answer(answer, packet)
    assert reported.failed == ["names_supported"]
    assert reported.passed
    gated = verify_answer(answer, packet, settings=CheckSettings(gate_names=True))
    assert gated.failed == ["names_supported"]
    assert not gated.passed


def test_a_wrong_figure_beside_a_known_name_still_fails() -> None:
    packet = GivenPacket("q", {"E1": BLOCK})
    verdict = verify_answer("Harbour Records signed Nordlys in 1999 [E1].", packet)
    assert verdict.failed == ["figures_supported"]
    assert not verdict.passed


PARAGRAPHS = (
    "Harbour Records signed Nordlys in 1998. Its founder was Ingrid Solberg. "
    "The label moved to London [E1].\n\n"
    "The band toured Japan in 2001. Nordlys split in 2004 [E2]."
)


def test_paragraph_span_covers_a_paragraphs_uncited_sentences() -> None:
    packet = GivenPacket(
        "q", {"E1": BLOCK, "E2": "The band toured Japan in 2001 and split in 2004."}
    )
    sentence = verify_answer(PARAGRAPHS, packet)
    assert "factual_sentences_cited" in sentence.failed
    paragraph = verify_answer(PARAGRAPHS, packet, settings=CheckSettings(citation_span="paragraph"))
    assert paragraph.failed == []
    assert paragraph.cited_sentences == 5
    wrong = PARAGRAPHS.replace("toured Japan in 2001", "toured Japan in 2002")
    failed = verify_answer(wrong, packet, settings=CheckSettings(citation_span="paragraph"))
    assert failed.failed == ["figures_supported"]
    moved = PARAGRAPHS.replace("Its founder was Ingrid Solberg.", "It toured Japan in 2001.")
    assert verify_answer(
        moved, packet, settings=CheckSettings(citation_span="paragraph")
    ).failed == ["figures_supported", "names_supported"]  # E1 holds neither 2001 nor Japan


def test_a_paragraph_that_cites_nothing_stays_uncited() -> None:
    packet = GivenPacket("q", {"E1": BLOCK})
    answer = "Nordlys was signed in 1998.\n\nIts founder was Ingrid Solberg [E1]."
    settings = CheckSettings(citation_span="paragraph")
    assert verify_answer(answer, packet, settings=settings).failed == ["factual_sentences_cited"]


words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=120)


@given(words, words)
def test_names_read_any_text(sentence: str, source: str) -> None:
    sources = [source_names(source)]
    missing = missing_names(sentence, sources)
    assert set(missing) <= {run for run, _ in sentence_names(sentence)}
    assert missing_names(sentence, [source_names(sentence)]) == []


COURT = (
    "Rebecca sings most of the songs on the show. The case reached the Supreme Court of "
    "the U. S. in 1985, and Honourable Justice Amina Odhiambo wrote the ruling. In its "
    "twentieth year the show moved to a new network."
)
"""Source text as retrieved pages write it: a first name alone, an acronym with spaced
points, a judge with her honorific."""


@pytest.mark.parametrize(
    ("answer", "new"),
    [
        # a run opening the sentence is named by any of its words, the opening one too
        ("Rebecca Kowalski sings most of the songs [E1].", []),
        ("Maria Kowalski sings most of the songs [E1].", ["Kowalski"]),
        # an acronym written with spaced points ("U. S.") names the run it abbreviates
        ("The case reached the Supreme Court of the United States [E1].", []),
        ("The case reached the Supreme Court of the United Kingdom [E1].", ["United Kingdom"]),
        # honorifics are titles, not names
        ("The ruling was written by Honourable Justice Odhiambo [E1].", []),
        ("The ruling was written by Honourable Justice Wanjiru [E1].", ["Wanjiru"]),
        # a noun numbering a part ("Season 20") is a label; not before a number, a name
        ("In Season 20, the show moved to a new network [E1].", []),
        ("In Season 20, the show moved to Fox [E1].", ["Fox"]),
        ("The Season Finale moved to a new network [E1].", ["Season Finale"]),
    ],
)
def test_openers_spaced_acronyms_honorifics_and_numbered_parts(answer: str, new: list[str]) -> None:
    assert _names(answer, COURT) == new


CHARTER = (
    "The Harbour Protection Act of 1998 limits dredging near Bergen, and the Court upheld it "
    "in 2001. The Senegalese-American engineer Awa Diallo drafted it for the UK office, "
    "which posts its rulings online."
)


@pytest.mark.parametrize(
    ("answer", "wrong", "new"),
    [
        (
            "The Act limits dredging near Bergen [E1].",
            "The Act was drafted by Ingrid Solberg [E1].",
            ["Ingrid Solberg"],
        ),
        (
            "In 2001 the Court upheld the Act [E1].",
            "In 2001 the Senate upheld the Act [E1].",
            ["Senate"],
        ),
        (
            "Its rulings are posted on the Internet [E1].",
            "Its rulings are posted on Facebook [E1].",
            ["Facebook"],
        ),
        (
            "An American engineer drafted it [E1].",
            "A Nigerian engineer drafted it [E1].",
            ["Nigerian"],
        ),
        (
            "She drafted it for the British office [E1].",
            "She drafted it for the Irish office [E1].",
            ["Irish"],
        ),
    ],
)
def test_referring_nouns_common_nouns_and_demonyms_are_no_new_names(
    answer: str, wrong: str, new: list[str]
) -> None:
    """ "the Act" refers back, "the Internet" is a common noun, "American" is in
    "Senegalese-American" and "British" is the UK's: none is new; a new name still is."""
    assert _names(answer, CHARTER) == []
    assert _names(wrong, CHARTER) == new


def test_the_pronoun_us_is_no_acronym() -> None:
    """ "us" in a source is a pronoun: only "US" or "U.S." writes the country."""
    block = "The engineers told us that the office drafted it."
    assert _names("An American engineer drafted it [E1].", block) == ["American"]
    assert _names("An American engineer drafted it [E1].", block + " It opened in the US.") == []
