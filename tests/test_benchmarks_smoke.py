"""The benchmark and evaluation commands run end to end on a tiny input in the upstream format.

No timings are asserted: only that every command completes, writes what the
report needs, and that the figures it writes are consistent (our packer never
over budget, shares are percentages, conservation of candidates).
"""

import json
from pathlib import Path

import pytest

from benchmarks import quality, report, speed
from benchmarks.adapters import (
    DataMissingError,
    catalog_documents,
    hotpotqa_cases,
    ramdocs_cases,
)
from benchmarks.baselines import OurPacker
from benchmarks.offline_tiktoken import CL100K_URL, offline_cl100k_cache
from packer import Catalog, TokenCounter
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
    return root


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
    ram = ramdocs_cases(data_dir)
    assert ram[0].misinfo == {"rd0.1"}
    assert ram[0].request.facets == ("Springfield",)
    assert ram[0].request.candidates[0].query_facets == ("Springfield",)
    assert ram[0].request.candidates[2].query_facets == ()


def test_our_packer_keeps_every_candidate_accounted(data_dir: Path) -> None:
    cases = hotpotqa_cases(data_dir) + ramdocs_cases(data_dir)
    requests = [c.request for c in cases]
    packer = OurPacker(
        PackingConfig(max_evidence_tokens=256),
        Catalog(catalog_documents(requests)),
        TokenCounter.load(),
    )
    for request in requests:
        packed = packer(request)
        assert packed.tokens is not None and packed.tokens <= 256
        assert set(packed.kept) <= {c.evidence_id for c in request.candidates}


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
                "--memory-sizes", "3", "--out", str(results / "speed.json"),
            ]
        )
        == 0
    )  # fmt: skip
    rows = json.loads((results / "quality.json").read_text())["rows"]
    packers = {r["packer"] for r in rows}
    assert {"ours", "naive", "llamaindex-truncate", "llamaindex-repack", "haystack-litm"} <= packers
    for row in rows:
        if row["packer"].startswith("ours"):
            assert row["over_budget"] == 0.0
        for key in ("both_supporting", "answer_present", "all_gold_present", "misinfo_packed"):
            assert row[key] is None or 0.0 <= row[key] <= 100.0
    timings = json.loads((results / "speed.json").read_text())
    assert [r["candidates_per_request"] for r in timings["sweep"]] == [2, 4]
    assert timings["memory"][0]["peak_rss_mb"] > 0
    compare = {r["packer"]: r for r in timings["compare"]}
    assert {"ours, cold caches", "ours, warm caches", "naive loop"} <= set(compare)
    assert compare["floor (tiktoken encode once)"]["tokens_encoded"] > 0
    assert compare["ours, cold caches"]["tokens_encoded"] > 0
    assert compare["ours, warm caches"]["tokens_encoded"] == 0  # every count cached
    assert "pack_request" in timings["profile"] and "pack_request" in timings["profile_warm"]
    written = report.write_report(results)
    text = written.read_text()
    assert "HotpotQA" in text and "Targets" in text and "cores" in text
    assert (results / "retention.png").stat().st_size > 0
    assert (results / "throughput.png").stat().st_size > 0
