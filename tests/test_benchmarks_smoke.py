"""The benchmark and evaluation commands run end to end on a tiny input in the upstream format.

No timings are asserted: only that every command completes, writes what the
report needs, and that the figures it writes are consistent (our packer never
over budget, shares are percentages, conservation of candidates), plus the
scoring rules the metrics rest on (what a packer showed, sentence cuts,
conflict pairs).
"""

import json
import subprocess
import sys
from functools import partial
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from benchmarks import quality, report, speed, targets
from benchmarks.adapters import (
    EVAL_TIME,
    DataMissingError,
    catalog_documents,
    conflict_nq_cases,
    hotpotqa_cases,
    multihop_cases,
    ramdocs_cases,
)
from benchmarks.baselines import (
    LlamaIndexTruncate,
    NaivePacker,
    OraclePacker,
    OurPacker,
    Packed,
    our_format_block,
    tiktoken_counter,
)
from benchmarks.label_problems import LABEL_PROBLEMS
from benchmarks.offline_tiktoken import CL100K_URL, offline_cl100k_cache
from benchmarks.workload import Pool, generate
from packer import Catalog, PackerRuntime, TokenCounter
from packer.pack import layout_of
from schemas import PackingConfig

TOPICS = ["river", "castle", "violin", "glacier", "harbor", "comet", "orchard", "lantern"]


def _paragraph(topic: str, q: int, k: int) -> str:
    return (
        f"The {topic} of question {q} was described in {1900 + 7 * k + q}. "
        f"Visitors to the {topic} often mention its long history and the people who kept it. "
        f"Records about the {topic} were written by clerk number {k} of the town archive."
    )


def _write_data(root: Path) -> Path:
    (root / "hotpotqa").mkdir(parents=True)
    (root / "ramdocs").mkdir()
    with open(root / "hotpotqa" / "dev_subsampled.jsonl", "w") as out:
        for q in range(3):
            contexts = [
                {
                    "id": str(k),
                    "title": f"{topic.title()} {q}",
                    "paragraph_text": _paragraph(topic, q, k),
                    "is_supporting": k in (0, 3),
                }
                for k, topic in enumerate(TOPICS)
            ]
            record = {
                "question_id": f"q{q}",
                "question_text": f"When was the river of question {q} described by the clerk?",
                "answers_objects": [{"spans": [str(1900 + q)]}],
                "contexts": contexts,
            }
            out.write(json.dumps(record) + "\n")
    with open(root / "ramdocs" / "RAMDocs_test.jsonl", "w") as out:
        for q in range(3):
            correct = (
                f"The comet of question {q} has a population of {100 + q} people in Springfield."
            )
            documents = [
                {"text": correct, "type": "correct", "answer": f"{100 + q} people"},
                {"text": correct.replace(str(100 + q), "999"), "type": "misinfo", "answer": "999"},
                {"text": _paragraph("lantern", q, 9), "type": "noise", "answer": "unknown"},
            ]
            record = {
                "question": f"What is the population of the comet of question {q}?",
                "documents": documents,
                "disambig_entity": ["Springfield"],
                "gold_answers": [f"{100 + q} people"],
                "wrong_answers": ["999"],
            }
            out.write(json.dumps(record) + "\n")
    _write_multihop(root / "multihop_rag")
    _write_conflict_nq(root / "conflict_nq")
    return root


def _fact(article: int, k: int, q: int, evidence: bool) -> dict:
    return {
        "title": f"Headline {article} of query {q}",
        "url": f"https://news.example/{q}/{article}",
        "published_at": f"2023-10-{10 + article:02d}T08:00:00+00:00",
        "fact": _paragraph(TOPICS[article + k], q, k),
        "in_evidence_list": evidence,
        "bm25_score": 10.0 - article - k / 10,
        "pool_id": 100 * q + 10 * article + k,
    }


def _write_multihop(folder: Path) -> None:
    folder.mkdir()
    pool = []
    with open(folder / "multihop_rag_500.jsonl", "w") as out:
        for q in range(3):
            null = q == 2
            passages = [_fact(a, k, q, not null and k == 0) for a in range(3) for k in range(2)]
            pool += [{f: v for f, v in p.items() if f not in ("in_evidence_list", "bm25_score")}
                     for p in passages]  # fmt: skip
            record = {
                "id": str(q),
                "query": f"Did the river and the castle of query {q} both appear?",
                "answer": ["yes", "clerk number 1", "Insufficient information."][q],
                "question_type": ["comparison_query", "inference_query", "null_query"][q],
                "evidence_list": [p for p in passages if p["in_evidence_list"]],
                "candidate_passages": passages,
            }
            out.write(json.dumps(record) + "\n")
    with open(folder / "facts_pool.jsonl", "w") as out:
        out.writelines(json.dumps(p) + "\n" for p in pool)


def _write_conflict_nq(folder: Path) -> None:
    folder.mkdir()
    with open(folder / "conflict_nq_eval.jsonl", "w") as out:
        for q in range(3):
            real = f"The harbor of question {q} opened on May {q + 3}, 1911, after a long debate."
            fakes = [
                real.replace(f"May {q + 3}, 1911", "June 9, 1987"),
                _paragraph("comet", q, 5),
            ]
            passages = [{"passage": real, "from_field": "real_passages", "index": 0}] + [
                {"passage": f, "from_field": "fake_passages", "index": i}
                for i, f in enumerate(fakes)
            ]
            record = {
                "id": f"c{q}",
                "question": f"when did the harbor of question {q} open",
                "real_short_answer": f"May {q + 3}, 1911",
                "fake_short_answer": "June 9, 1987",
                "candidate_passages": passages[::-1],
            }
            out.write(json.dumps(record) + "\n")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write_data(tmp_path_factory.mktemp("data"))


def test_missing_data_says_where_to_get_it(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(DataMissingError, match="HanNight/RAMDocs"):
        hotpotqa_cases(tmp_path / "nowhere")
    assert (
        quality.main(["--data-dir", str(tmp_path / "nowhere"), "--out", str(tmp_path / "q")]) == 2
    )
    assert "--data-dir" in capsys.readouterr().err


def test_adapters_map_records_and_bm25_prefers_matching_text(data_dir: Path) -> None:
    cases = hotpotqa_cases(data_dir)
    assert len(cases) == 3
    request = cases[0].request
    assert len(request.candidates) == len(TOPICS)
    assert cases[0].supporting == {"hp0.0", "hp0.3"}
    best = max(request.candidates, key=lambda c: c.retrieval_score)
    assert best.document_id == "hp0.0"  # the only paragraph about the river
    assert [c.title for c in hotpotqa_cases(data_dir, titles=False)[0].request.candidates] == [
        None
    ] * len(TOPICS)
    ram = ramdocs_cases(data_dir)
    assert ram[0].misinfo == {"rd0.1"}
    assert ram[0].correct == {"rd0.0"}
    assert ram[0].request.facets == ("Springfield",)
    assert ram[0].request.candidates[0].query_facets == ("Springfield",)
    assert ram[0].request.candidates[2].query_facets == ()


def test_multihop_facts_share_their_article_and_keep_the_given_scores(data_dir: Path) -> None:
    cases = multihop_cases(data_dir)
    first = cases[0].request.candidates
    assert [c.evidence_id for c in first[:3]] == ["mh0.a0.0", "mh0.a0.1", "mh0.a1.0"]
    assert first[0].document_id == first[1].document_id == "mh0.a0"
    assert first[0].chunk_id != first[1].chunk_id and first[0].span is None
    assert first[2].retrieval_score == 9.0 and first[0].title == "Headline 0 of query 0"
    assert all(c.effective_at is not None and c.effective_at < EVAL_TIME for c in first)
    assert cases[0].evidence == {"mh0.a0.0", "mh0.a1.0", "mh0.a2.0"}
    assert cases[2].null_query and not cases[2].evidence
    [doc] = [d for d in catalog_documents([cases[0].request]) if d.document_id == "mh0.a1"]
    assert doc.revisions[0].effective_at == first[2].effective_at


def test_widened_multihop_ranks_the_evidence_among_the_pool_on_one_scale(
    data_dir: Path,
) -> None:
    given = multihop_cases(data_dir)
    wide = multihop_cases(data_dir, candidates=12)
    for q, (narrow, case) in enumerate(zip(given, wide, strict=True)):
        texts = [c.text for c in case.request.candidates]
        scores = [c.retrieval_score for c in case.request.candidates]
        assert len(texts) == 12 == len(set(texts)) and scores == sorted(scores, reverse=True)
        evidence = {c.text for c in narrow.request.candidates if c.evidence_id in narrow.evidence}
        shown = {c.text for c in case.request.candidates if c.evidence_id in case.evidence}
        assert shown == evidence  # every evidence fact, however low it ranks
        assert any(f"question {q} " not in t for t in texts)  # other queries' facts join
        assert texts[0].startswith(("The river", "The castle"))  # the query's words rank first
    assert wide[2].null_query and not wide[2].evidence


def test_conflict_nq_labels_one_real_passage_against_fakes(data_dir: Path) -> None:
    [case, *_] = conflict_nq_cases(data_dir)
    assert case.real == "cq0.2" and case.fakes == {"cq0.0", "cq0.1"}
    assert all(c.title is None for c in case.request.candidates)


def test_shown_text_and_sentence_cuts() -> None:
    text = "First sentence here. Second one, with a comma. Third."
    assert quality.ends_at_sentence("First sentence here.", text)
    assert quality.ends_at_sentence("Second one, with a comma.", text)
    assert not quality.ends_at_sentence("First sentence", text)
    assert not quality.ends_at_sentence("Second one, with a comma", text)
    packed = Packed(shown={"a": "First sentence here."}, context="", copies={"b": "a"})
    texts = {"a": text, "b": text}
    assert packed.kept == {"a", "b"}
    assert not quality.whole(packed, "b", texts) and not quality.mid_sentence_cut(packed, texts)
    assert quality.whole(Packed(shown={"a": f" {text}\n"}, context=""), "a", texts)


def test_conflict_pairs_are_true_only_across_the_labels() -> None:
    wrong, right = frozenset({"m1", "m2"}), frozenset({"c"})
    # {c, m1}: one true pair; {m2, n}: a false pair and m2 grouped with no correct passage.
    pairs, true, found = quality.detection_counts(
        [frozenset({"c", "m1"}), frozenset({"m2", "n"})], wrong, right
    )
    assert (pairs, true, found) == (2, 1, 1)


def test_documented_label_problems_are_set_apart_in_a_second_precision() -> None:
    """A flagged pair the labels count false is reported both ways: as labelled, and set
    apart when it is a documented label problem (`Telugu` / `Hindi`, both labelled
    correct); an undocumented false pair stays false in both."""
    assert len(LABEL_PROBLEMS) == 24 and frozenset({"rd130.0", "rd130.2"}) in LABEL_PROBLEMS
    groups = (
        frozenset({"rd130.0", "rd130.1"}),  # correct against misinformation: true
        frozenset({"rd130.0", "rd130.2"}),  # both labelled correct: documented
        frozenset({"rd130.2", "rd130.3"}),  # both labelled correct: not documented
    )
    packed = Packed(shown={}, context="", conflict_groups=groups)
    labels = (frozenset({"rd130.1"}), frozenset({"rd130.0", "rd130.2", "rd130.3"}))
    metrics = quality.detection_metrics([None], [packed], lambda _: labels)
    assert metrics["conflict_precision"] == round(1 / 3, 3)
    assert metrics["conflict_pairs_set_apart"] == 1
    assert metrics["conflict_precision_labels_apart"] == 0.5


def _row(dataset: str, packer: str, budget: int, value: float) -> dict:
    return {"dataset": dataset, "packer": packer, "budget": budget,
            "primary": "all_gold_present", "all_gold_present": value,
            "mean_tokens": 100.0, "mean_text_tokens": 80.0, "mean_blocks": 2.0,
            "empty_prompts": 0.0, "mid_sentence_cut": 0.0}  # fmt: skip


def test_targets_judge_only_what_was_measured() -> None:
    rows = [
        _row("ramdocs", "ours", 150, 10.0),
        _row("ramdocs", "naive-exact", 150, 20.0),
        _row("ramdocs", "ours", 512, 80.0),
        _row("ramdocs", "naive-exact", 512, 70.0),
    ]
    [lost] = targets.losses(rows)
    assert (lost["budget"], lost["delta"], lost["markup"]) == (150, -10.0, "10.0 vs 10.0")
    [below, *_] = targets.not_below_naive_exact(rows)
    assert below.met is False and "150: 10.0 vs 20.0" in below.detail
    rows[0]["all_gold_present"] = 20.0
    assert not targets.losses(rows) and targets.not_below_naive_exact(rows)[0].met
    judged = {t.name: t.met for t in targets.evaluate(rows)}
    assert judged["hotpotqa: both supporting at 512 >= 85%"] is None  # not measured
    assert judged["ramdocs: every gold answer at 512 >= 71% with no mid-sentence cut"]


def test_gap_closed_is_judged_only_where_the_oracle_leads_by_more_than_3_points() -> None:
    rows = [
        _row("ramdocs", "ours", 150, 30.0),
        _row("ramdocs", "naive-exact", 150, 20.0),
        _row("ramdocs", "oracle", 150, 60.0),
        _row("ramdocs", "ours", 512, 80.0),
        _row("ramdocs", "naive-exact", 512, 78.0),
        _row("ramdocs", "oracle", 512, 81.0),
    ]
    cells = {c["budget"]: c for c in targets.gaps(rows)}
    assert (cells[150]["gap"], cells[150]["closed"]) == (40.0, 0.25)
    assert cells[512]["closed"] is None  # a 3-point gap is not judged
    [target] = targets.gap_closed(rows)
    assert target.met is False and "150: 0.25" in target.detail and "512" not in target.detail
    rows[0]["all_gold_present"] = 40.0
    assert targets.gap_closed(rows)[0].met
    assert targets.gap_closed(rows[:2])[0].met is None  # no oracle row: not measured


def test_each_mechanism_gap_closed_is_reported_beside_ours() -> None:
    rows = [
        _row("ramdocs", "ours", 150, 30.0),
        _row("ramdocs", "ours-no-pairs-first", 150, 25.0),
        _row("ramdocs", "naive-exact", 150, 20.0),
        _row("ramdocs", "oracle", 150, 60.0),
    ]
    text = "\n".join(report.mechanism_gaps(rows))
    assert "| ramdocs | 150 | 0.25 | 0.12 |" in text
    assert "ours-no-calibrated-relevance" not in text  # not in this run
    assert report.mechanism_gaps(rows[:1] + rows[2:]) == []


def test_the_news_qa_measure_is_judged_against_the_oracle_packing_the_answer() -> None:
    """A passage holding the answer packed whole: gap closed against `oracle-answer`, the
    packer's primary metric and oracle left aside; the report shows it beside the gap
    closed without the full-name rule."""
    measure = {"answer_passage": None}
    rows = [
        {**_row("multihop_rag-50", p, 150, 50.0), **measure, "answer_passage": v}
        for p, v in [("ours", 80.0), ("ours-no-full-names", 70.0), ("naive-exact", 60.0),
                     ("oracle", 70.0), ("oracle-answer", 100.0)]
    ]  # fmt: skip
    [cell] = targets.gaps(rows, metric="answer_passage", oracle=targets.ANSWER_ORACLE)
    assert (cell["metric"], cell["oracle"], cell["gap"], cell["closed"]) == (
        "answer_passage", 100.0, 40.0, 0.5)  # fmt: skip
    [target] = targets.answer_passage_gap(rows)
    assert target.met and target.detail == "150: 0.5"
    rows[0]["answer_passage"] = 70.0
    assert targets.answer_passage_gap(rows)[0].met is False
    assert targets.gaps(rows)[0]["closed"] is None  # the primary: no gap to judge
    text = "\n".join(report.held_out_measures(rows))
    assert (
        "| multihop_rag-50 | 150 | answer_passage | 100.0 | 60.0 | 70.0 | 40.0 | 0.25 | 0.25 |"
        in text
    )
    assert report.held_out_measures([r for r in rows if r["packer"] != "oracle-answer"]) == []


def test_the_answer_passages_are_those_of_an_inference_query_holding_its_answer(
    data_dir: Path,
) -> None:
    cases = multihop_cases(data_dir)
    inference = [c for c in cases if c.inference]
    assert len(inference) == 1 and inference[0].answer == "clerk number 1"
    held = quality.answer_passages(inference[0])
    texts = {c.evidence_id: c.text for c in inference[0].request.candidates}
    assert held and {e for e, t in texts.items() if "clerk number 1 " in t} == set(held)
    assert all(quality.answer_passages(c) == [] for c in cases if not c.inference)


def test_oracle_packs_gold_first_shortest_first_and_never_overruns(data_dir: Path) -> None:
    runtime = PackerRuntime.load()
    layout = layout_of(PackingConfig(), runtime)
    cases = hotpotqa_cases(data_dir)
    gold = frozenset().union(*(c.supporting for c in cases))
    for budget in (150, 400):
        oracle = OraclePacker(budget, layout, gold)
        for case in cases:
            packed = oracle(case.request)
            assert packed.tokens is not None and packed.tokens <= budget
            assert packed.tokens == layout.count(packed.context)
            shown = list(packed.shown)
            golds = [e for e in shown if e in case.supporting]
            assert shown[: len(golds)] == golds  # gold blocks come first
            texts = {c.evidence_id: c.text for c in case.request.candidates}
            lengths = [layout.count(texts[e]) for e in golds]
            assert lengths == sorted(lengths)


def test_naive_loop_in_our_format_never_overruns(data_dir: Path) -> None:
    runtime = PackerRuntime.load()
    count = tiktoken_counter(runtime.tokens.encoding)
    block = partial(our_format_block, layout_of(PackingConfig(), runtime))
    packer = NaivePacker(200, count, count_headers=True, block=block)
    for case in multihop_cases(data_dir) + ramdocs_cases(data_dir):
        packed = packer(case.request)
        assert packed.shown and count(packed.context) <= 200
        assert packed.context.startswith("<E1")


def test_llamaindex_truncate_sends_nothing_when_its_window_cannot_share_out(
    data_dir: Path,
) -> None:
    """50 candidates in a window of 20 tokens: LlamaIndex refuses, the peer packs nothing."""
    wide = multihop_cases(data_dir, candidates=50)
    assert LlamaIndexTruncate(20)(wide[0].request) == Packed(shown={}, context="")
    assert LlamaIndexTruncate(2048)(wide[0].request).shown


def test_our_packer_keeps_every_candidate_accounted(data_dir: Path) -> None:
    cases = [
        *hotpotqa_cases(data_dir),
        *ramdocs_cases(data_dir),
        *multihop_cases(data_dir),
        *conflict_nq_cases(data_dir),
    ]
    requests = [c.request for c in cases]
    packer = OurPacker(
        PackingConfig(max_evidence_tokens=256),
        Catalog(catalog_documents(requests)),
        PackerRuntime.load(),
    )
    for request in requests:
        packed = packer(request)
        assert packed.tokens is not None and packed.tokens <= 256
        assert packed.kept <= {c.evidence_id for c in request.candidates}
        texts = {c.evidence_id: c.text for c in request.candidates}
        for evidence_id, shown in packed.shown.items():  # read back from the prompt
            assert " ".join(shown.split()) in " ".join(texts[evidence_id].split())


def test_offline_cache_serves_cl100k_without_network() -> None:
    import tiktoken.load

    with offline_cl100k_cache():
        data = tiktoken.load.read_file_cached(CL100K_URL)
    assert len(data) > 1_000_000


def test_eval_bench_and_report_commands_run(data_dir: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    assert (
        quality.main(
            [
                "--data-dir",
                str(data_dir),
                "--budgets",
                "256",
                "--out",
                str(results / "quality.json"),
            ]
        )
        == 0
    )
    assert (
        speed.main(
            [
                "--data-dir", str(data_dir), "--requests", "4", "--repeats", "1",
                "--sweep", "2", "4", "--sweep-total", "8", "--beam-requests", "0",
                "--memory-sizes", "3", "--retrieval-requests", "2",
                "--out", str(results / "speed.json"),
            ]
        )
        == 0
    )  # fmt: skip
    rows = json.loads((results / "quality.json").read_text())["rows"]
    assert {r["dataset"] for r in rows} == set(quality.DATASETS)
    assert {r["packer"] for r in rows} == {s.name for s in quality.PACKERS}
    for row in rows:
        if row["packer"].startswith("ours"):
            assert row["over_budget"] == 0.0
            assert row["mid_sentence_cut"] == 0.0
        assert row[row["primary"]] is not None
        for key in ("both_supporting", "all_gold_present", "all_evidence", "both_kept_flagged"):
            assert row.get(key) is None or 0.0 <= row[key] <= 100.0
    [conflicts] = [r for r in rows if r["dataset"] == "conflict_nq" and r["packer"] == "ours"]
    assert conflicts["conflict_precision"] == 1.0  # the date-changed copy, flagged
    assert conflicts["mean_blocks"] > 0 and conflicts["empty_prompts"] == 0.0
    assert "excluded_per_request" in conflicts
    timings = json.loads((results / "speed.json").read_text())
    assert [r["candidates_per_request"] for r in timings["sweep"]] == [2, 4]
    shapes = {r["workload"]: r for r in timings["retrieval"]}
    assert set(shapes) == set(speed.RETRIEVAL_SHAPES)
    chunks, long = shapes["chunks of 2 documents"], shapes["long passages (4 paragraphs)"]
    assert chunks["tokens_per_candidate"] < shapes["paragraphs"]["tokens_per_candidate"]
    assert long["tokens_per_candidate"] > shapes["paragraphs"]["tokens_per_candidate"]
    same = shapes[speed.SAME_DOCUMENT]  # chunks as long as a paragraph, not as a chunk
    assert same["tokens_per_candidate"] > chunks["tokens_per_candidate"]
    timed = [*timings["compare"], *timings["repeats"], *timings["retrieval"], *timings["sweep"]]
    assert all(r["load_before"] >= 0 for r in timed)  # every ratio with the load beside it
    assert timings["memory"][0]["peak_rss_mb"] > 0
    compare = {r["packer"]: r for r in timings["compare"]}
    assert {"ours, cold caches", "ours, warm caches", "naive loop"} <= set(compare)
    assert compare["floor (tiktoken encode once)"]["tokens_encoded"] > 0
    assert compare["ours, cold caches"]["tokens_encoded"] > 0
    assert compare["ours, warm caches"]["tokens_encoded"] == 0  # every count cached
    assert "pack_request" in timings["profile"] and "pack_request" in timings["profile_warm"]
    written = report.write_report(results)
    text = written.read_text()
    assert "conflict_nq" in text and "Where ours loses" in text and "cores" in text
    news_qa = ("multihop_rag", "multihop_rag-50")
    answered = [r for r in rows if r["dataset"] in news_qa and r["packer"] == "ours"]
    assert all(r["answer_passage"] is not None for r in answered)  # one inference query
    [best] = [r for r in rows if r["dataset"] == "multihop_rag" and r["packer"] == "oracle-answer"]
    assert best["answer_passage"] == 100.0  # its answer's passage first, always whole
    assert "The held-out news QA measure" in text
    assert "**met**" in text or "**MISSED**" in text
    assert (results / "retention.png").stat().st_size > 0
    assert (results / "gap.png").stat().st_size > 0 and "Gap to the oracle" in text
    assert (results / "throughput.png").stat().st_size > 0


def test_chosen_subset_prints_its_table_and_writes_nothing(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "quality.json"
    args = ["--data-dir", str(data_dir), "--datasets", "multi", "conflict_nq",
            "--packers", "ours", "naive-", "--budgets", "150", "512", "--limit", "2",
            "--no-write", "--out", str(out)]  # fmt: skip
    assert quality.main(args) == 0
    printed = capsys.readouterr().out
    assert "multihop_rag (2 questions)" in printed and "conflict_nq (2 questions)" in printed
    assert "hotpotqa" not in printed.split("- ")[0]
    assert "naive-ourformat" in printed and "ours-no-dedup" not in printed
    assert not out.exists()
    assert quality.choose(["ours", "ours:edges", "ours-no-dedup"], ["ours-"]) == ["ours-no-dedup"]
    with pytest.raises(ValueError, match="matches none"):
        quality.choose(["ours"], ["nothing"])


def test_report_names_quality_results_of_an_older_evaluation(tmp_path: Path) -> None:
    old_row = {"dataset": "hotpotqa", "packer": "ours", "budget": 256, "both_supporting": 1.0}
    (tmp_path / "quality.json").write_text(json.dumps({"machine": {}, "rows": [old_row]}))
    assert "older evaluation; run `make eval`" in report.write_report(tmp_path).read_text()


def test_the_plain_job_parses_packs_and_writes_every_request(
    data_dir: Path, tmp_path: Path
) -> None:
    """The bench's Beam-free job: every request parsed from its line, packed, and its rows
    written as the sinks write them (read back with pyarrow); a bad line is refused."""
    pool = Pool.load(data_dir)
    requests = list(generate(pool, 3, 4, seed=5))
    lines = tmp_path / "req.jsonl"
    lines.write_text("".join(r.model_dump_json() + "\n" for r in requests) + "{not json\n")
    tokens = TokenCounter.load()
    with offline_cl100k_cache():
        parts = speed.plain_job(Catalog(pool.catalog()), tokens, lines, tmp_path / "out")
    assert set(parts) == {"parse", "pack", "rows"} and all(t >= 0 for t in parts.values())
    manifests = pq.read_table(tmp_path / "out" / "manifests.parquet")
    assert manifests.column("request_id").to_pylist() == [r.request_id for r in requests]
    prompts = (tmp_path / "out" / "prompts.jsonl").read_text().splitlines()
    assert len(prompts) == len(requests)


def test_the_beam_ceiling_is_the_loop_over_the_plain_job_and_the_start() -> None:
    beam = [
        {"packer": "ours in a loop, cold", "seconds": 40.0, "cpu_seconds": 30.0},
        {"packer": speed.PLAIN_JOB, "seconds": 50.0, "x_core": 0.8, "parse_seconds": 6.0,
         "pack_seconds": 41.0, "rows_seconds": 3.0, "cpu_seconds": 40.0},
        {"packer": "evpack batch, 20 requests (the start alone)", "seconds": 5.0,
         "cpu_seconds": 3.0},
        {"packer": "evpack batch, 1 worker", "seconds": 70.0, "requests_per_s": 20000 / 70,
         "cpu_seconds": 50.0, "load_before": 4.0},
    ]  # fmt: skip
    lines = "\n".join(report.speed_misses({"beam": beam}))
    assert "would reach 0.73x" in lines  # 40 / (50 + 5)
    assert "the other 15 s" in lines  # 70 - 5 - 50
    assert "the job 50.0 (0.60x the loop)" in lines  # CPU seconds: 30 / 50
    assert "would reach 0.70x." in lines  # 30 / (40 + 3)


def test_the_speed_bench_imports_no_job_module_at_start() -> None:
    """A child of the changes section runs the bench against an older tree's `packer` and
    `schemas`: the job's modules (which import today's schemas) load only where used."""
    code = "import sys, benchmarks.speed; print(sorted(m for m in sys.modules if '.' in m))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.split("'")
    assert "transforms.collector" in loaded
    assert not any(m.startswith("transforms.") and m != "transforms.collector" for m in loaded)


def test_the_earlier_targets_are_explained_as_ratios_to_the_floor() -> None:
    floor = {"packer": "floor (tiktoken encode once)", "candidates_per_s": 10000.0}
    results = {
        "compare": [
            floor,
            {"packer": "ours, warm caches", "x_floor": 0.8},
            {"packer": "llamaindex PromptHelper.truncate", "candidates_per_s": 500.0},
        ],
        "repeats": [
            {"packer": "floor (tiktoken encode once)", "tokens_encoded": 1000.0},
            {"packer": "ours, cold caches", "tokens_encoded": 500.0},
            {"packer": "ours, warm caches", "x_floor": 1.25},
        ],
    }
    lines = "\n".join(report.speed_misses(results))
    assert "25x the fastest LlamaIndex step is 1.25x the floor" in lines  # 25 * 500 / 10000
    assert "tokenizes 50% of the floor's tokens" in lines
    assert "leaves 0.17x for all the Python, which alone takes 0.80x" in lines


def test_same_document_paragraphs_are_hotpotqa_paragraphs_of_two_documents(
    data_dir: Path,
) -> None:
    """The shape the issue measured: 10 candidates, 2 documents x 5 chunks of consecutive
    HotpotQA paragraphs (never RAMDocs'), each chunk as long as about one paragraph."""
    pool = Pool.load(data_dir)
    hotpotqa = pool.hotpotqa_only()
    assert 0 < len(hotpotqa.paragraphs) == pool.hotpotqa < len(pool.paragraphs)
    shape = speed.RETRIEVAL_SHAPES[speed.SAME_DOCUMENT]
    for request in generate(hotpotqa, 5, 10, seed=13, **shape):
        documents = [c.document_id for c in request.candidates]
        assert len(documents) == 10 and len(set(documents)) == 2
        assert all(int(d[1:]) < pool.hotpotqa for d in documents)


def test_the_speed_bench_runs_only_the_sections_asked_for(tmp_path: Path) -> None:
    data_dir = _write_data(tmp_path / "data")
    out = tmp_path / "speed.json"
    args = ["--data-dir", str(data_dir), "--repeats", "1", "--sweep", "2", "--sweep-total", "4"]
    with pytest.raises(SystemExit):  # a part of the figures never replaces the report's file
        speed.main([*args, "--sections", "sweep"])
    assert speed.main([*args, "--sections", "sweep", "--out", str(out)]) == 0
    timings = json.loads(out.read_text())
    assert [r["candidates_per_request"] for r in timings["sweep"]] == [2]
    assert not {"compare", "retrieval", "repeats", "memory", "beam"} & set(timings)


def test_a_partial_rerun_keeps_the_other_sections_under_their_own_stamps() -> None:
    old, older, new = ({"commit": c} for c in ("b2", "a1", "c3"))
    earlier = {
        "machine": old,
        "compare": [1], "profile": "p", "profile_warm": "w", "stages": [],
        "sweep": [2], "beam": [3], "memory": [4],
        "carried": [{"sections": ["beam", "memory", "repeats"], "machine": older}],
    }  # fmt: skip
    results = speed.merged({"machine": new, "sweep": [5]}, earlier)
    assert results["sweep"] == [5] and results["compare"] == [1] and results["beam"] == [3]
    assert results["carried"] == [
        {"sections": ["beam", "memory"], "machine": older},
        {"sections": ["compare"], "machine": old},
    ]
    assert "carried" not in speed.merged({"machine": new, "sweep": [5]}, {"machine": old})
