"""Side input, join and Bigtable give byte-identical outputs on the same inputs.

The Bigtable table is loaded from the same catalog file with `evpack catalog load`,
on the real emulator. Dead letters are compared without `received_at` (wall clock).
"""

from pathlib import Path

import pytest

from pipelines.catalog import main as catalog_main
from tests.batch_run import SAMPLES, Outputs, flags, read_outputs, run_test_pipeline

pytestmark = pytest.mark.emulators

MODES = ("side_input", "join", "bigtable")


def _run(mode: str, out: Path, project: str) -> Outputs:
    run_test_pipeline(
        flags(
            SAMPLES / "requests.jsonl",
            out,
            f"--catalog_mode={mode}",
            f"--bigtable_project={project}",
            "--bigtable_instance=evpack",
            "--bigtable_table=modes",
        )
    )
    return read_outputs(out)


def _comparable(outputs: Outputs) -> Outputs:
    letters = [{k: v for k, v in r.items() if k != "received_at"} for r in outputs.dead_letters]
    return Outputs(outputs.prompts, outputs.manifests, outputs.exclusions, outputs.counts, letters)


def test_every_output_is_identical_across_catalog_modes(gcp_emulators, tmp_path) -> None:
    project = gcp_emulators.project
    load = [
        "load",
        f"--catalog={SAMPLES / 'catalog.jsonl'}",
        f"--bigtable_project={project}",
        "--bigtable_instance=evpack",
        "--bigtable_table=modes",
    ]
    assert catalog_main(load) == 0
    runs = {mode: _comparable(_run(mode, tmp_path / mode, project)) for mode in MODES}
    reference = runs["side_input"]
    assert reference.manifests and reference.exclusions
    assert all(m["catalog_version"] for m in reference.manifests)
    for mode in MODES[1:]:
        assert runs[mode] == reference, f"{mode} differs from side_input"
