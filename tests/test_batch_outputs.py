"""Output directories: a run never mixes its shards with an earlier run's."""

from pathlib import Path

import pytest

from pipelines.batch import run
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
