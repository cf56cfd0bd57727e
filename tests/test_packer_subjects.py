"""What names a passage beyond its title: the name it opens with (`subject_of`, tested
with selection), its publisher and its day of publication."""

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packer import Catalog, PackerRuntime, pack_request
from packer.question import read_question, stem
from packer.subjects import named_days, on_named_day, publisher_of, publisher_segments
from schemas import PackingConfig
from tests.factories import candidate, document, request


@pytest.mark.parametrize(
    ("url", "publisher"),
    [
        ("https://www.theverge.com/2023/9/26/apple", "theverge"),
        ("https://techcrunch.com/2023/12/15/news/", "techcrunch"),
        ("https://www.smh.com.au/business/a.html", "smh"),
        ("https://en.globes.co.il/en/article", "globes"),
        ("bench://mh1.a0", ""),
        ("not a url", ""),
        ("https://localhost/x", ""),
    ],
)
def test_publisher_of_is_the_hosts_registered_label(url, publisher):
    assert publisher_of(url) == publisher


def test_publisher_segments_name_publishers_with_what_is_said_of_each():
    question = (
        "Does 'The Verge' report that chargers are cheap, while the Sydney Morning Herald "
        "says interest rates fall, as people expect?"
    )
    segments = publisher_segments(read_question(question), {"theverge", "smh", "people", "wired"})
    assert set(segments) == {"theverge", "smh"}  # "people" is lower case: no name
    assert {"charger", "cheap"} <= segments["theverge"]  # stems: `question.stem`
    assert "interest" not in segments["theverge"]
    assert {"interest", "rate"} <= segments["smh"]
    assert not {"sydney", "herald", "verge"} & (segments["smh"] | segments["theverge"])


def test_publishers_named_together_are_each_said_what_follows():
    """In "both TechCrunch and The Verge, has spent billions" the claim is said of both;
    a publisher named apart from the next by content words keeps its own part."""
    publishers = {"techcrunch", "theverge", "wired"}
    joint = publisher_segments(
        read_question(
            "Which company, reported by both TechCrunch and The Verge, has spent billions "
            "to stay the default search engine?"
        ),
        publishers,
    )
    assert joint["techcrunch"] == joint["theverge"]
    assert {"company", "billion", "default", "search"} <= joint["techcrunch"]
    apart = publisher_segments(
        read_question(
            "Did TechCrunch report that chargers sold out, while Wired says prices fell?"
        ),
        publishers,
    )
    assert "charger" in apart["techcrunch"] and "charger" in apart["wired"]  # between: either
    assert stem("prices") in apart["wired"] and stem("prices") not in apart["techcrunch"]


def test_publisher_segments_keep_whole_words_without_stems():
    question = read_question("Did both TechCrunch and The Verge report billions in fines?")
    segments = publisher_segments(question, {"techcrunch", "theverge"}, stems=False)
    assert {"billions", "fines"} <= segments["theverge"]
    assert "billion" not in segments["theverge"]


def test_the_questions_first_word_names_no_publisher():
    assert publisher_segments(read_question("Who won the cup?"), {"who"}) == {}


@given(
    st.lists(st.sampled_from(["The", "Verge", "verge", "Wired", "said", "BBC", "News", "x"])),
    st.sets(st.sampled_from(["theverge", "wired", "bbc", "bbcnews", "bn", "said"])),
)
def test_publisher_segments_name_only_known_publishers_named_capitalized(words, publishers):
    segments = publisher_segments(read_question("Does " + " ".join(words) + "?"), publishers)
    assert set(segments) <= publishers
    assert "said" not in segments


def test_named_days_read_month_names_and_iso_dates():
    days = named_days(read_question("Did The Verge on 2023-11-24 and Wired on October 1st agree?"))
    assert days == {(2023, 11, 24), (None, 10, 1)}
    assert on_named_day(datetime(2023, 11, 24, 18, tzinfo=UTC), days)
    assert on_named_day(datetime(2021, 10, 1, tzinfo=UTC), days)  # no year named
    assert not on_named_day(datetime(2023, 11, 25, tzinfo=UTC), days)
    assert not on_named_day(None, days)
    assert named_days(read_question("What happened in 2023?")) == frozenset()


def test_a_fact_of_the_named_publisher_wins_the_last_room():
    """Room for one block: the question names the lower-scored fact's publisher."""
    runtime = PackerRuntime.load()
    cands = [
        candidate(
            "e1",
            "d1",
            text="Wireless chargers sold out within hours at the big retailers.",
            source_url="https://www.wired.com/story/chargers",
            retrieval_score=0.9,
        ),
        candidate(
            "e2",
            "d2",
            text="Shoppers found chargers discounted by a third during the weekend.",
            source_url="https://www.theverge.com/2023/chargers",
            retrieval_score=0.2,
        ),
    ]
    docs = [document("d1"), document("d2")]
    question = "What did The Verge report about chargers?"

    def packed(**config):
        probe = pack_request(request(cands[0], question=question), Catalog(docs[:1]),
                             PackingConfig(), runtime)  # fmt: skip
        budget = probe.manifest.budget.used + 2
        result = pack_request(
            request(*cands, question=question),
            Catalog(docs),
            PackingConfig(max_evidence_tokens=budget, enable_sentence_units=False, **config),
            runtime,
        )
        return [e.evidence_id for e in result.manifest.evidence]

    assert packed() == ["e2"]
    assert packed(enable_source_links=False) == ["e1"]
