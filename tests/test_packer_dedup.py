"""Exact, overlap and near-duplicate dedup, reprints, and conflict detection."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packer import Catalog, PackerRuntime, pack_request
from packer.records import Evidence, canonical_words, sha256_hex, text_facts
from packer.reprints import compare_copies
from schemas import DedupConfig, PackingConfig, Revision
from tests.factories import candidate, document, request


@pytest.fixture(scope="module")
def runtime() -> PackerRuntime:
    return PackerRuntime.load()


def run(runtime, docs, *cands, config=None, **req):
    return pack_request(request(*cands, **req), Catalog(docs), config or PackingConfig(), runtime)


def reasons(result):
    return {x.evidence_id: x.reason.value for x in result.exclusions}


def test_exact_duplicates_fold_into_best_ranked_across_documents(runtime):
    docs = [document("d1"), document("d2"), document("d3")]
    cands = [
        candidate("e1", "d1", text="Refunds take  5 days.", retrieval_score=0.2),
        candidate("e2", "d2", text="REFUNDS take 5 days.", retrieval_score=0.9),
        candidate("e3", "d3", text="Refunds\ttake 5 days.", retrieval_score=0.5),
    ]
    result = run(runtime, docs, *cands)
    [block] = result.manifest.evidence
    assert block.evidence_id == "e2"
    assert block.derived_from == ["e1", "e3"]
    assert result.exclusions == []


def test_nfkc_normalization_makes_compatibility_forms_equal(runtime):
    docs = [document("d1"), document("d2")]
    cands = [
        candidate("e1", "d1", text="Ｒｅｆｕｎｄｓ ﬁve days"),
        candidate("e2", "d2", text="refunds five days"),
    ]
    result = run(runtime, docs, *cands)
    assert len(result.manifest.evidence) == 1


def test_folded_duplicates_are_excluded_when_their_keeper_is_not_packed(runtime):
    long_text = "word " * 400
    docs = [document("d1"), document("d2")]
    cands = [candidate("e1", "d1", text=long_text), candidate("e2", "d2", text=long_text.upper())]
    result = run(runtime, docs, *cands, config=PackingConfig(max_evidence_tokens=100))
    assert reasons(result) == {"e1": "oversized", "e2": "duplicate_exact"}


def _spanned(eid, text, start, **kw):
    return candidate(eid, "d1", text=text, span={"start": start, "end": start + len(text)}, **kw)


REVISION_TEXT = (
    "Returns are accepted within 30 days. Damaged items ship back free. Sale items are final."
)


def test_overlapping_spans_merge_over_the_union(runtime):
    a = _spanned("e1", REVISION_TEXT[0:50], 0, retrieval_score=0.4)
    b = _spanned("e2", REVISION_TEXT[30:89], 30, retrieval_score=0.9)
    result = run(runtime, [document("d1")], a, b)
    [block] = result.manifest.evidence
    assert block.evidence_id == "e2"
    assert block.derived_from == ["e1"]
    content = result.prompt.messages[1].content
    assert REVISION_TEXT[0:89] in content
    assert content.count("Damaged items") == 1


def test_chain_of_three_overlaps_merges_into_one(runtime):
    a = _spanned("e1", REVISION_TEXT[0:40], 0)
    b = _spanned("e2", REVISION_TEXT[30:70], 30)
    c = _spanned("e3", REVISION_TEXT[60:89], 60)
    result = run(runtime, [document("d1")], a, b, c)
    [block] = result.manifest.evidence
    assert sorted([block.evidence_id, *block.derived_from]) == ["e1", "e2", "e3"]
    assert REVISION_TEXT[0:89] in result.prompt.messages[1].content


def test_contiguous_spans_merge_with_the_exact_span_and_a_new_hash(runtime):
    a = _spanned("e1", REVISION_TEXT[0:37], 0, retrieval_score=0.2)
    b = _spanned("e2", REVISION_TEXT[37:67], 37, retrieval_score=0.9)  # touches a
    c = _spanned("e3", REVISION_TEXT[70:89], 70)  # a gap after b
    result = run(runtime, [document("d1")], a, b, c)
    blocks = {e.evidence_id: e for e in result.manifest.evidence}
    assert sorted(blocks) == ["e2", "e3"]
    merged = blocks["e2"]
    assert merged.derived_from == ["e1"]
    assert (merged.span_start, merged.span_end) == (0, 67)
    assert merged.text_sha256 == sha256_hex(REVISION_TEXT[0:67])
    assert REVISION_TEXT[0:67].strip() in result.prompt.messages[1].content
    unpacked = run(
        runtime,
        [document("d1")],
        a,
        b,
        config=PackingConfig(  # the full framing: its labels make the block too large
            max_evidence_tokens=5, enable_sentence_units=False, compact_framing_below=0
        ),
    )
    assert reasons(unpacked) == {"e2": "oversized", "e1": "merged_adjacent"}


def test_contiguous_spans_of_different_sections_or_with_adjacent_off_stay_apart(runtime):
    a = _spanned("e1", REVISION_TEXT[0:37], 0, section="returns")
    b = _spanned("e2", REVISION_TEXT[37:67], 37, section="damage")
    assert len(run(runtime, [document("d1")], a, b).manifest.evidence) == 2
    levels = tuple(x for x in DedupConfig().levels if x != "adjacent")
    off = PackingConfig(dedup=DedupConfig(levels=levels))
    a, b = _spanned("e1", REVISION_TEXT[0:37], 0), _spanned("e2", REVISION_TEXT[37:67], 37)
    assert len(run(runtime, [document("d1")], a, b, config=off).manifest.evidence) == 2


@given(
    cuts=st.lists(st.integers(0, len(REVISION_TEXT)), min_size=2, max_size=12),
    sections=st.lists(st.sampled_from([None, "a", "b"]), min_size=6, max_size=6),
    budget=st.sampled_from([8, 30, 2000]),
)
def test_span_merges_conserve_candidates_and_show_exact_spans(runtime, cuts, sections, budget):
    """Random spans of one revision (overlapping, touching, gapped, in sections): every
    candidate is in a block, a `derived_from` or one exclusion row, and every whole
    block shows exactly the revision's text over its span, hashed afresh."""
    points = sorted(cuts)
    spans = [(a, b) for a, b in zip(points, points[2:] + points[1:2], strict=False) if a < b]
    cands = [
        _spanned(f"e{i}", REVISION_TEXT[a:b], a, section=sections[i % len(sections)])
        for i, (a, b) in enumerate(spans)
    ]
    if not cands:
        return
    result = run(
        runtime, [document("d1")], *cands, config=PackingConfig(max_evidence_tokens=budget)
    )
    packed = [e.evidence_id for e in result.manifest.evidence]
    derived = [d for e in result.manifest.evidence for d in e.derived_from]
    excluded = [x.evidence_id for x in result.exclusions]
    assert sorted(packed + derived + excluded) == sorted(c.evidence_id for c in cands)
    for block in result.manifest.evidence:
        shown = REVISION_TEXT[block.span_start : block.span_end]
        assert block.text_sha256 == sha256_hex(shown)
        assert shown.strip() in result.prompt.messages[1].content


def test_overlaps_in_different_revisions_do_not_merge(runtime):
    docs = [
        document(
            "d1",
            revisions=(
                Revision(revision_id="r1", effective_at="2026-01-01T00:00:00Z"),
                Revision(revision_id="r2", effective_at="2026-02-01T00:00:00Z"),
            ),
        )
    ]
    a = _spanned("e1", REVISION_TEXT[0:50], 0, revision_id="r1")
    b = _spanned("e2", REVISION_TEXT[30:89], 30, revision_id="r2")
    result = run(runtime, docs, a, b, history=True)
    assert len(result.manifest.evidence) == 2


def test_overlap_whose_texts_disagree_is_not_merged(runtime):
    a = _spanned("e1", REVISION_TEXT[0:50], 0)
    b = _spanned("e2", "X" * 20 + REVISION_TEXT[50:89], 30)
    result = run(runtime, [document("d1")], a, b)
    assert len(result.manifest.evidence) == 2


BASE = (
    "The warranty covers manufacturing defects in the device for the full period and the "
    "customer may request a repair or replacement at any authorised service centre nearby"
)


def test_near_duplicates_fold_within_one_revision_only(runtime):
    near = BASE.replace("nearby", "close by")
    docs = [document("d1"), document("d2")]
    same_doc = [
        candidate("e1", "d1", text=BASE, retrieval_score=0.9),
        candidate("e2", "d1", text=near),
    ]
    result = run(runtime, docs, *same_doc)
    [block] = result.manifest.evidence
    assert (block.evidence_id, block.derived_from) == ("e1", ["e2"])
    unpacked = run(runtime, docs, *same_doc, config=PackingConfig(max_evidence_tokens=20))
    assert reasons(unpacked) == {"e1": "oversized", "e2": "duplicate_near"}
    other_doc = [candidate("e1", "d1", text=BASE), candidate("e2", "d2", text=near)]
    result = run(runtime, docs, *other_doc)  # "nearby" and "close by": another wording
    assert len(result.manifest.evidence) == 2


def test_dedup_switched_off_keeps_every_copy(runtime):
    docs = [document("d1"), document("d2")]
    cands = [candidate("e1", "d1", text="Same text."), candidate("e2", "d2", text="Same text.")]
    result = run(runtime, docs, *cands, config=PackingConfig(enable_dedup=False))
    assert len(result.manifest.evidence) == 2


def test_conflict_pair_is_kept_and_flagged(runtime):
    docs = [document("d1"), document("d2")]
    cands = [
        candidate(
            "e1",
            "d1",
            text="The Model X battery lasts 12 hours, per Acme in 2024.",
            retrieval_score=0.9,
        ),
        candidate(
            "e2",
            "d2",
            text="The Model X battery lasts 20 hours, per Zenith in 2023.",
            retrieval_score=0.1,
        ),
        candidate("e3", "d2", text="Unrelated passage about shipping.", retrieval_score=0.5),
    ]
    config = PackingConfig(per_document_cap=1, max_evidence_tokens=52)  # room for two
    result = run(runtime, docs, *cands, config=config)
    [conflict] = result.manifest.conflicts
    assert conflict.evidence_ids == ["e1", "e2"]
    assert sorted(conflict.labels) == ["E1", "E2"]
    assert "Conflicting evidence: E1, E2.\n" in result.prompt.messages[1].content  # compact
    # e2 was pulled in with its partner, so d2's only slot went to it, not to e3
    assert reasons(result) == {"e3": "per_document_cap"}


def _gated(*cands):
    return [
        Evidence(
            c, c.document_id, "r1", None, c.text, text_facts(c.text), 0.5, c.query_facets, None
        )
        for c in cands
    ]


REPORT = (
    "The city council approved a budget of 4,000 dollars for the new U.S. library on Monday, "
    "and Mayor Jane Smith said construction would begin in March."
)


def _report_and(runtime, other: str, question: str = "What did the council decide?"):
    """The report in d1 (ranked first) and `other` in d2, packed for `question`."""
    docs = [document("d1"), document("d2")]
    cands = [
        candidate("e1", "d1", text=REPORT, retrieval_score=0.9),
        candidate("e2", "d2", text=other, retrieval_score=0.1),
    ]
    return run(runtime, docs, *cands, question=question)


@pytest.mark.parametrize(
    "variant",
    [
        REPORT.replace("4,000", "4000").replace("U.S.", "US"),
        "(CNN) — " + REPORT,
        "WASHINGTON (Reuters) - " + REPORT.lower(),
        REPORT.replace("Monday,", "Monday ;"),
    ],
)
def test_formatting_variants_of_one_report_fold_as_duplicates(runtime, variant):
    result = _report_and(runtime, variant)
    [block] = result.manifest.evidence
    assert (block.evidence_id, block.derived_from) == ("e1", ["e2"])
    assert result.manifest.conflicts == []


def test_reprints_differing_in_wording_only_fold_keeping_every_source(runtime):
    docs = [document(f"d{i}") for i in range(1, 5)]
    reprint = REPORT.replace("approved", "has approved").replace("said", "has said")
    cands = [
        candidate("e1", "d1", text=REPORT, retrieval_score=0.5),
        candidate("e2", "d2", text=reprint, retrieval_score=0.9),
        candidate("e3", "d3", text=reprint.replace(" the new", " a new"), retrieval_score=0.1),
        # a changed content word, or a sentence more, is not the same report
        candidate("e4", "d4", text=REPORT.replace("approved", "rejected"), retrieval_score=0.2),
    ]
    result = run(runtime, docs, *cands)
    blocks = {e.evidence_id: sorted(e.derived_from) for e in result.manifest.evidence}
    assert blocks == {"e2": ["e1", "e3"], "e4": []}
    longer = _report_and(runtime, REPORT + " The vote was close.")
    assert len(longer.manifest.evidence) == 2


@pytest.mark.parametrize(
    ("changed", "question"),
    [
        (REPORT.replace("4,000", "9,500"), "How much was the library budget?"),
        (REPORT.replace("Jane Smith", "John Doe"), "Who said construction would begin?"),
        (REPORT.replace("March", "October"), "When will construction begin?"),
        (REPORT.replace("Jane Smith", "John Doe"), "What did the council decide?"),
    ],
)
def test_a_changed_figure_date_or_name_is_a_conflict_both_kept_and_flagged(
    runtime, changed, question
):
    result = _report_and(runtime, changed, question)
    assert [e.evidence_id for e in result.manifest.evidence] == ["e1", "e2"]
    [conflict] = result.manifest.conflicts
    assert conflict.evidence_ids == ["e1", "e2"] and conflict.labels == ["E1", "E2"]
    assert "Conflicting evidence: E1, E2 disagree" in result.prompt.messages[1].content


@pytest.mark.parametrize(
    ("changed", "question"),
    [
        (REPORT.replace("Jane Smith", "John Doe"), "How much was the library budget?"),
        (REPORT.replace("Jane Smith", "John Doe"), "When will construction begin?"),
        (REPORT.replace("U.S. library", "Springfield library"), "How much was the budget?"),
    ],
)
def test_a_changed_fact_the_question_does_not_ask_is_no_conflict(runtime, changed, question):
    """Asked a number or a date, copies differing only in a name are two reports kept
    apart, not a disagreement about the answer (RAMDocs: `Borena` / `Garre` clan beside
    one population figure)."""
    result = _report_and(runtime, changed, question)
    assert [e.evidence_id for e in result.manifest.evidence] == ["e1", "e2"]
    assert result.manifest.conflicts == []


def test_added_facts_are_neither_a_reprint_nor_a_conflict():
    a, b = _gated(
        candidate("e1", "d1", text=REPORT),
        candidate("e2", "d2", text=REPORT + " The library will open in 2027 with 12,000 books."),
    )
    assert compare_copies(a, b, DedupConfig()) is None


def test_passages_about_different_facets_never_conflict():
    a, b = _gated(
        candidate("e1", "d1", text=REPORT, query_facets=("springfield",)),
        candidate("e2", "d2", text=REPORT.replace("4,000", "9,500"), query_facets=("ogdenville",)),
    )
    assert compare_copies(a, b, DedupConfig()) is None


def test_unrelated_passages_sharing_a_template_are_no_conflict():
    a, b = _gated(
        candidate("e1", "d1", text="It is one of the oldest towns in the north of Wales."),
        candidate("e2", "d2", text="Paris hosted the 1924 Olympics, the second time it did."),
    )
    assert compare_copies(a, b, DedupConfig()) is None


words = st.lists(
    st.sampled_from(["the", "U.S.", "4,000", "city", "Paid", "Smith", "on"]), max_size=12
)


@given(words=words)
def test_canonical_form_ignores_case_punctuation_number_format_and_wire_prefix(words):
    text = " ".join(words)
    variant = "(AP) — " + text.upper().replace("4,000", "4000").replace("U.S.", "US") + "."
    assert canonical_words(variant) == canonical_words(text)


SEASON = (
    "The 2012-13 Vermont Catamounts men's basketball team represented the University of "
    "Vermont during the 2012-13 NCAA Division I men's basketball season."
)


def test_templated_articles_whose_titles_name_the_difference_are_no_conflict():
    """Seasons, editions, years: the changed fact is in the titles, so each passage is
    about its own subject; without titles to say so, they are flagged."""
    other = SEASON.replace("2012-13", "2013-14")
    titled = _gated(
        candidate("e1", "d1", text=SEASON, title="2012-13 Vermont Catamounts team"),
        candidate("e2", "d2", text=other, title="2013-14 Vermont Catamounts team"),
    )
    assert compare_copies(*titled, DedupConfig()) is None
    untitled = _gated(
        candidate("e1", "d1", text=SEASON, title=None),
        candidate("e2", "d2", text=other, title=None),
    )
    assert compare_copies(*untitled, DedupConfig()) == "conflict"


@pytest.mark.parametrize(
    ("before", "after"),
    [("approved", "rejected"), ("the new", "the old"), ("Monday", "Friday")],
)
def test_a_few_content_words_swapped_in_a_near_copy_are_a_conflict(before, after):
    a, b = _gated(
        candidate("e1", "d1", text=REPORT),
        candidate("e2", "d2", text=REPORT.replace(before, after)),
    )
    assert compare_copies(a, b, DedupConfig()) == "conflict"
