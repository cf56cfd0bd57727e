"""`make -C deploy` reads like the templates it launches: every template parameter has its
make variable, nothing asks the cloud while the Makefile is read, a missing PROJECT or
REGION is one line and exit 2, and no target shares its name with the root Makefile's.

A fake `gcloud` (and `docker`) on the PATH records any call: Dataflow cannot run here,
and a dry run (`make -n`) must not need it.
"""

import os
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from pipelines.launch import PIPELINES
from tests.test_deploy import DEPLOY, ROOT, VALID, evpack_flags, parameters

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")

DERIVED = {
    "batch": {"input", "output", "bigquery_dataset", "prompts_topic", "config"},
    "streaming": {"subscription", "prompts_topic", "dead_letter_topic", "bigquery_dataset"},
}
"""Parameters the Makefile builds from its resource names (PROJECT, BUCKET, topics), not
from a variable of the parameter's own name; with the catalog's (CATALOG_MODE picks them)."""
CATALOG = {"catalog", "catalog_mode", "catalog_refresh_seconds", "config"}
CATALOG |= {"bigtable_project", "bigtable_instance", "bigtable_table"}
RENAMED = {("streaming", "output"): "STREAM_OUTPUT"}
"""The one parameter whose variable is not its name in upper case (OUTPUT is the batch run's)."""


@pytest.fixture
def fake_cloud(tmp_path: Path) -> dict[str, str]:
    """An environment whose `gcloud`, `docker` and `git` log their calls to `calls`."""
    for tool in ("gcloud", "docker"):
        fake = tmp_path / tool
        fake.write_text(f'#!/bin/sh\necho "{tool} $@" >> {tmp_path}/calls\n')
        fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PROJECT", "REGION")}
    return {**env, "PATH": f"{tmp_path}:{env['PATH']}", "CALLS": str(tmp_path / "calls")}


def _make(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "-n", "-s", "-C", str(DEPLOY), *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


def _value(pipeline: str, name: str) -> str:
    """A valid value of a parameter: its first choice, else its first VALID example."""
    choices = evpack_flags()[name].choices
    if choices:
        return list(choices)[-1]
    return VALID[name][0] if name in VALID else "true"


def _passed(commands: str) -> dict[str, str]:
    words = shlex.split(commands.replace("\\\n", " "))
    pairs = (w.removeprefix("--parameters=").split("=", 1) for w in words)
    starts = (w.startswith("--parameters=") for w in words)
    return {p[0]: p[1] for p, start in zip(pairs, starts, strict=True) if start}


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_every_template_parameter_has_its_make_variable(
    pipeline: str, fake_cloud: dict[str, str]
) -> None:
    declared = set(parameters(pipeline)) - {"sdk_container_image"}
    own = declared - DERIVED[pipeline] - CATALOG
    given = {name: _value(pipeline, name) for name in own}
    variables = [f"{RENAMED.get((pipeline, n), n.upper())}={v}" for n, v in given.items()]
    passed: dict[str, str] = {}
    for mode in ("auto", "bigtable"):
        done = _make(
            fake_cloud,
            f"launch-{pipeline}",
            "PROJECT=evpack-prod",
            "REGION=europe-west1",
            f"CATALOG_MODE={mode}",
            "BATCH_AUDIT=bigquery",
            "BATCH_PROMPTS=topic",
            *variables,
        )
        assert done.returncode == 0, done.stderr
        passed |= _passed(done.stdout)
    passed.pop("sdk_container_image")
    assert set(passed) == declared
    assert {n: passed[n] for n in own} == given
    for name, value in passed.items():  # what the Makefile builds passes the template too
        assert re.fullmatch(parameters(pipeline)[name]["regexes"][0], value), (name, value)
    assert not Path(fake_cloud["CALLS"]).exists()


@pytest.mark.parametrize(
    ("given", "missing"),
    [
        ([], "PROJECT=<project id> REGION=<region>"),
        (["PROJECT=evpack-prod"], "REGION=<region>"),
        (["REGION=europe-west1"], "PROJECT=<project id>"),
    ],
)
def test_a_missing_project_or_region_is_one_line_and_exit_2_without_a_cloud_call(
    given: list[str], missing: str, fake_cloud: dict[str, str]
) -> None:
    start = time.monotonic()
    done = _make(fake_cloud, "launch-batch", *given)
    assert time.monotonic() - start < 2
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert f"set {missing}, e.g. make -C deploy launch-batch PROJECT=" in line
    assert not Path(fake_cloud["CALLS"]).exists()


def _targets(makefile: Path) -> set[str]:
    text = makefile.read_text(encoding="utf-8")
    return set(re.findall(r"^([a-z][\w%-]*):", text, re.M))


def test_no_deploy_target_shares_a_name_with_a_root_target() -> None:
    """`make templates` (regenerate metadata.json) and the deploy Makefile's target that
    builds and pushes the images and flex templates were one name for two things."""
    root, deploy = _targets(ROOT / "Makefile"), _targets(DEPLOY / "Makefile")
    assert "templates" in root and "push-templates" in deploy
    assert root & deploy == set()
