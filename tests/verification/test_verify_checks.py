"""Each deterministic check of an answer, on examples and as properties."""

import re
from pathlib import Path

from hypothesis import assume, given
from hypothesis import strategies as st

from packer.verification.answer_sentences import split_sentences
from packer.verification.checks import (
    GATE_REASONS,
    CheckSettings,
    GivenPacket,
    Verdict,
    checkable_id,
    verify_answer,
)
from packer.verification.claims import parse_answer, sentence_facts
from packer.verification.figures import number_value, text_figures
from schemas import ExclusionReason
from schemas.verification import CheckResult

BLOCKS = {
    "E1": "The Rotterdam hub opened on 8 August 2014 with 4,000 staff.",
    "E2": 'The policy calls refunds "a courtesy, not a right" and allows 30 days.',
    "E3": "Refunds are accepted within 14 days of purchase.",
}
PACKET = GivenPacket(
    request_id="q1",
    blocks=BLOCKS,
    own_ids=frozenset({"ev-001", "doc-hub"}),
    excluded={"ev-999": "Secret salary bands range from 90,000 to 140,000 euros per year here."},
)
RUN_IDS = frozenset({"ev-001", "doc-hub", "ev-777", "doc-payroll"})


def _outcomes(answer: str, packet: GivenPacket = PACKET) -> dict[str, str]:
    return {c.name: c.outcome for c in verify_answer(answer, packet, RUN_IDS).checks}


def _check(verdict: Verdict, name: str) -> CheckResult:
    return next(c for c in verdict.checks if c.name == name)


def _failed(answer: str, packet: GivenPacket = PACKET) -> set[str]:
    return set(verify_answer(answer, packet, RUN_IDS).failed)


def test_a_correct_answer_passes_every_applicable_check() -> None:
    answer = (
        "The hub opened on August 8, 2014 [E1]. It had 4000 staff [E1]. "
        'Refunds are "a courtesy, not a right" [E2].'
    )
    outcomes = _outcomes(answer)
    assert _failed(answer) == set()
    assert outcomes["conflicts_reported"] == "skip"
    assert outcomes["abstention"] == "skip"
    assert outcomes["no_excluded_text"] == "pass"


def test_unknown_label() -> None:
    verdict = verify_answer("The hub opened in 2014 [E7].", PACKET, RUN_IDS)
    check = next(c for c in verdict.checks if c.name == "labels_exist")
    assert check.outcome == "fail" and check.offending == ["E7"]
    assert "factual_sentences_cited" in verdict.failed  # E7 supports nothing


def test_footnote_marks_are_not_citations() -> None:
    assert _failed("The hub opened in 2014 [1].") == {"factual_sentences_cited", "cites_evidence"}
    assert _failed("The hub opened in 2014 [E1] [sic] [9].") == set()


def test_changed_figure_and_date() -> None:
    assert _failed("It had 4,500 staff [E1].") == {"figures_supported"}
    assert _failed("The hub opened on 9 August 2014 [E1].") == {"figures_supported"}
    assert _failed("The hub opened in August 2014 [E1].") == set()
    assert _failed("The hub opened on 2014-08-08 [E1].") == set()


def test_figure_must_be_in_a_cited_block() -> None:
    assert _failed("Refunds are accepted within 14 days [E1].") == {"figures_supported"}
    assert _failed("Refunds are accepted within 14 days [E1, E3].") == set()
    assert _failed("Refunds are accepted within 14 days [E1-E3].") == set()


def test_quoted_phrase() -> None:
    assert _failed('Refunds are "a courtesy" [E2].') == set()
    assert _failed('Refunds are "a legal right" [E2].') == {"figures_supported"}


def test_uncited_factual_sentence() -> None:
    cited = "The hub is large [E1]. "
    assert _failed(cited + "The hub opened in 2014.") == {"factual_sentences_cited"}
    assert _failed(cited + "The hub is small.") == set()  # no figure, date or quote to check
    assert _failed("The sources do not give the 2015 staff count.") == set()
    assert _failed("I could not find the 2015 staff count.") == set()
    assert _failed(cited + "He was born in 1852, date of death unknown.") == {
        "factual_sentences_cited"
    }


def test_citation_after_the_full_stop_belongs_to_its_sentence() -> None:
    assert _failed("The hub opened in 2014. [E1] It is large.") == set()


def test_leaked_ids() -> None:
    verdict = verify_answer("See ev-777 and doc-payroll. The hub is ev-001.", PACKET, RUN_IDS)
    check = next(c for c in verdict.checks if c.name == "no_leaked_ids")
    assert check.outcome == "fail" and check.offending == ["ev-777", "doc-payroll"]


def test_conflicts_need_every_side() -> None:
    packet = GivenPacket(request_id="q", blocks=BLOCKS, conflicts=(("E2", "E3"),))
    both = "Refunds: 30 days [E2] or 14 days [E3], the sources conflict."
    assert _failed(both, packet) == set()
    one = "Refunds are accepted within 14 days [E3]."
    verdict = verify_answer(one, packet)
    assert verdict.failed == ["conflicts_reported"]
    assert _check(verdict, "conflicts_reported").offending == ["E2"]


def test_uncovered_facet_must_be_declared_not_answered() -> None:
    packet = GivenPacket(request_id="q", blocks=BLOCKS, uncovered=("return-shipping",))
    declared = "The hub opened in 2014 [E1]. The sources do not say who pays return shipping."
    assert _failed(declared, packet) == set()
    answered = "The hub opened in 2014 [E1]. Return shipping is paid by the customer [E3]."
    assert _failed(answered, packet) == {"uncovered_facets_declared"}
    silent = "The hub opened in 2014 [E1]."
    assert _failed(silent, packet) == {"uncovered_facets_declared"}


def test_empty_packet_needs_an_abstention() -> None:
    empty = GivenPacket(request_id="q", blocks={})
    assert _failed("The sources do not contain the answer.", empty) == set()
    assert "abstention" in _failed("The hub opened in 2014 [E1].", empty)
    assert _failed("The hub is large.", empty) == {"abstention"}


def test_excluded_text() -> None:
    leak = "Salary bands range from 90,000 to 140,000 euros per year here [E1]."
    verdict = verify_answer(leak, PACKET, RUN_IDS)
    check = next(c for c in verdict.checks if c.name == "no_excluded_text")
    assert check.outcome == "fail" and check.offending == ["ev-999"]
    without = GivenPacket(request_id="q", blocks=BLOCKS)
    assert _outcomes(leak, without)["no_excluded_text"] == "skip"


def test_excluded_text_shared_with_packed_evidence_is_no_leak() -> None:
    packet = GivenPacket(
        request_id="q", blocks=BLOCKS, excluded={"old": BLOCKS["E3"] + " Old rev."}
    )
    assert "no_excluded_text" not in _failed(
        "Refunds are accepted within 14 days of purchase [E3].", packet
    )


def test_number_and_date_normalization() -> None:
    assert number_value("4,000", None, None) == number_value("4000", None, None) == "4000"
    assert number_value("2", "50", None) == "2.5"
    assert number_value("3", "5", "million") == "3500000"
    facts = text_figures("On 2014-08-08 and in May 2020.")
    assert {"2014-08-08", "2014-08", "--08-08", "2020-05"} <= facts.dates
    keys = [f.key for f in sentence_facts("On August 8, 2014 and 8 Aug. 2014 at 3 pm.")]
    assert keys == ["2014-08-08", "2014-08-08", "3"]


def test_sentences() -> None:
    assert split_sentences("One [E1]. Two. [E2] Three?") == ["One [E1].", "Two [E2].", "Three?"]
    assert [s.labels for s in parse_answer("A [E1, E2]. B (E3).")] == [("E1", "E2"), ("E3",)]


def test_checkable_ids_cannot_be_prose() -> None:
    assert checkable_id("ev-001") and checkable_id("doc_7")
    assert not checkable_id("refunds") and not checkable_id("a1")


figures = st.integers(min_value=0, max_value=10**9)
labels_of = st.sampled_from(sorted(BLOCKS))


@given(figures, st.booleans())
def test_a_figure_is_supported_whatever_its_grouping(n: int, grouped: bool) -> None:
    packet = GivenPacket(request_id="q", blocks={"E1": f"The total was {n} units."})
    spelled = f"{n:,}" if grouped else str(n)
    assert verify_answer(f"The total was {spelled} units [E1].", packet).passed


@given(figures, figures)
def test_a_changed_figure_is_flagged(n: int, m: int) -> None:
    assume(n != m)
    packet = GivenPacket(request_id="q", blocks={"E1": f"The total was {n} units."})
    assert verify_answer(f"The total was {m:,} units [E1].", packet).failed == ["figures_supported"]


@given(st.dates(), st.sampled_from(["%B %-d, %Y", "%-d %B %Y", "%Y-%m-%d", "%b. %-d, %Y"]))
def test_a_date_is_supported_whatever_its_format(day, fmt: str) -> None:
    assume(day.year >= 1000)
    packet = GivenPacket(
        request_id="q", blocks={"E1": f"It happened on {day.strftime('%d %B %Y')}."}
    )
    answer = f"It happened on {day.strftime(fmt)} [E1]."
    assert verify_answer(answer, packet).passed, answer


@given(st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=6))
def test_labels_exist_exactly_when_listed(cited: list[int]) -> None:
    answer = " ".join(f"Claim {i} holds [E{i}]." for i in cited)
    packet = GivenPacket(request_id="q", blocks={f"E{i}": f"Claim {i} holds." for i in range(1, 4)})
    check = _check(verify_answer(answer, packet), "labels_exist")
    unknown = sorted({f"E{i}" for i in cited if i > 3}, key=lambda s: cited.index(int(s[1:])))
    assert check.offending == unknown
    assert (check.outcome == "pass") == (not unknown)


def test_the_gate_reasons_are_the_withheld_ones_the_docs_list() -> None:
    """`no_excluded_text` checks the reasons declared `withheld` in the enum, which
    docs/verify.md names; a provenance failure or a reason past the gates is not one."""
    page = Path(__file__).resolve().parents[2] / "docs" / "verify.md"
    rows = page.read_text(encoding="utf-8").splitlines()
    row = next(line for line in rows if line.startswith("| `no_excluded_text`"))
    listed = set(re.findall(r"`(\w+)`", row.split("(", 1)[1].split(")", 1)[0]))
    assert GATE_REASONS == {r for r in ExclusionReason if r.withheld} == listed
    assert not {ExclusionReason.HASH_MISMATCH, ExclusionReason.OVER_BUDGET} & GATE_REASONS


def test_a_packets_memo_of_sentences_changes_no_verdict() -> None:
    """Answers to one packet share its memo of read sentences; each verdict is the one a
    fresh packet gives, whichever citation span read the sentence first."""
    blocks = {"E1": "The bridge opened in 1932 with 40 toll staff.", "E2": "It cost $13 million."}
    packet = GivenPacket("q", blocks)
    answers = [
        ("It opened in 1932.\nIt cost $13 million [E2].\n\nIt had 40 staff [E1].", "paragraph"),
        ("It opened in 1932.\nIt cost $13 million [E2].\n\nIt had 40 staff [E1].", "sentence"),
        ("It opened in 1932 [E1].\nIt cost $14 million [E2].", "sentence"),
        ("It opened in 1932 [E1].\nIt cost $13 million [E2].", "sentence"),
    ]
    for answer, span in answers:
        settings = CheckSettings(citation_span=span)
        fresh = verify_answer(answer, GivenPacket("q", blocks), settings=settings)
        assert verify_answer(answer, packet, settings=settings) == fresh, answer
    assert [verify_answer(a, packet).passed for a, _ in answers[2:]] == [False, True]
    assert len(packet.sentences) == 5  # each distinct sentence read once
