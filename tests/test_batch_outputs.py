"""Output directories and the run summary: no mixing with earlier runs; the summary is exact."""

from collections import Counter
from pathlib import Path

import pytest

from pipelines.batch import output_files, run
from tests.batch_run import SAMPLES, flags, read_outputs


def test_an_earlier_run_is_never_mixed_in(tmp_path: Path) -> None:
    out = tmp_path / "out"
    stale = out / "prompts" / "prompts-00000-of-00009.jsonl"
    stale.parent.mkdir(parents=True)
    stale.write_text('{"request_id": "from-an-earlier-run"}\n')
    argv = flags(SAMPLES / "requests.jsonl", out)
    with pytest.raises(ValueError, match="already holds 1 files of an earlier run"):
        run(argv)
    assert stale.exists()
    finished = run([*argv, "--overwrite"])
    assert not stale.exists()
    assert len(read_outputs(out).prompts) == finished.summary.prompts_out == 28


def test_the_summary_agrees_with_the_files(tmp_path: Path) -> None:
    finished = run(flags(SAMPLES / "requests.jsonl", tmp_path))
    summary, out = finished.summary, read_outputs(tmp_path)
    assert summary.records_in == len(out.manifests) + len(out.dead_letters)
    assert summary.prompts_out == len(out.prompts)
    assert summary.dead_letters_total == len(out.dead_letters)
    assert summary.candidates_in == sum(m["candidates_in"] for m in out.manifests)
    assert summary.excluded == dict(Counter(x["reason"] for x in out.exclusions))
    tokens = sorted(p["prompt_tokens"] for p in out.prompts)
    for pct, value in ((50, summary.prompt_tokens_p50), (95, summary.prompt_tokens_p95)):
        assert value in tokens
        assert sum(t <= value for t in tokens) >= pct / 100 * len(tokens)
        assert sum(t < value for t in tokens) < pct / 100 * len(tokens)
    assert summary.prompt_tokens_max == tokens[-1]
    text = summary.render()
    for name, path in output_files(str(tmp_path)).items():
        # outbox: staged only with --prompts_topic; held_prompts: only when held
        assert (path in text) == (name not in ("outbox", "held_prompts"))
