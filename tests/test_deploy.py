"""The flex templates: metadata.json <-> pipeline options, and the Dockerfile, checked statically.

Docker cannot build here; what can drift silently is checked instead: the
committed metadata against what the options generate, the declared parameters
against the flags each pipeline really reads, the regexes against valid and
invalid values, and the image's pins against pyproject.toml.
"""

import argparse
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from google.cloud.dataflow_v1beta3.types import ParameterType, TemplateMetadata

from pipelines.launch import PIPELINE_ENV, PIPELINES, template_switches
from pipelines.options import templates
from pipelines.options.flags import section_flags
from pipelines.options.jobs import (
    BATCH_SECTIONS,
    JOB_SECTIONS,
    TEMPLATE_SECTIONS,
    resolve,
    resolve_streaming,
)

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
CATALOG = str(ROOT / "samples" / "catalog.jsonl")

RESOLVERS: dict[str, Callable[[PipelineOptions], Any]] = {
    "batch": resolve,
    "streaming": resolve_streaming,
}

VALID: dict[str, list[str]] = {
    "input": ["gs://evpack-data/in/*.jsonl", "gs://my_bucket.example/requests.parquet"],
    "output": ["gs://evpack-data/out/run1", "gs://evpack-data"],
    "catalog": ["gs://evpack-data/catalog.jsonl", "gs://evpack-data/catalog/*.parquet"],
    "config": ["gs://evpack-data/packing.yaml"],
    "event_time": ["2026-01-31T12:00:00Z", "2026-01-31T12:00", "2026-01-31T12:00:00.5+01:00"],
    "overwrite": ["true", "false"],
    "max_dead_letter_percent": ["0", "50", "12.5", "100"],
    "model": [
        "claude-sonnet-4-5",
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "publishers/google/models/gemini-2.5-pro",
        "ft:gpt-4o-mini:acme::abc123",
        "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-haiku-20240307-v1:0",
    ],
    "max_record_bytes": ["4194304", "1"],
    "input_limit": ["8192", "1"],
    "reserved_answer": ["1024", "0"],
    "max_evidence_tokens": ["600"],
    "subscription": ["projects/evpack-prod/subscriptions/evpack-requests"],
    "prompts_topic": ["projects/evpack-prod/topics/evpack-prompts"],
    "dead_letter_topic": ["projects/evpack-prod/topics/evpack-dead-letters"],
    "bigquery_dataset": ["evpack-prod.evpack_audit"],
    "create_tables": ["true", "false"],
    "audit_job": ["nightly", "gs://evpack-data/out/run1", "support answers (EU)"],
    "run_key": ["2026-12-01", "gs://evpack-data/out/run1", "night 2026-12-01 (EU)"],
    "timestamp_attribute": ["event_time", ""],
    "catalog_refresh_seconds": ["60", "0.5"],
    "bigtable_project": ["evpack-prod"],
    "bigtable_instance": ["evpack-catalog"],
    "bigtable_table": ["catalog", "catalog_v2"],
    "catalog_cache_entries": ["100000", "1"],
    "window_seconds": ["60"],
    "allowed_lateness_seconds": ["0", "3600"],
    "dedup_ttl_seconds": ["86400"],
    "sink_timeout_seconds": ["60", "1", "900"],
}
"""Values each parameter's regex must accept (choices are checked from the parser)."""

INVALID: dict[str, list[str]] = {
    "input": ["samples/requests.jsonl", "/tmp/in.jsonl", "gs://Bad_Bucket/x"],
    "output": ["out/run1", "s3://bucket/out"],
    "catalog": ["samples/catalog.jsonl", "gs://evpack-data/"],
    "config": ["packing.yaml"],
    "event_time": ["yesterday", "2026-01-31"],
    "model": ["", "gpt 4", "-rf", "a" * 300],
    "overwrite": ["yes", ""],
    "max_dead_letter_percent": ["101", "-1", "1e3", "50%"],
    "max_record_bytes": ["0", "-1", "4MB"],
    "input_limit": ["0", "-1", "8k"],
    "reserved_answer": ["-1", "01", "1k"],
    "max_evidence_tokens": ["0", "600 "],
    "subscription": ["evpack-requests", "projects/evpack-prod/topics/evpack-requests"],
    "prompts_topic": ["projects/evpack-prod/subscriptions/x-prompts", "evpack-prompts"],
    "dead_letter_topic": ["topics/evpack-dead-letters"],
    "bigquery_dataset": ["evpack_audit", "evpack-prod:evpack_audit"],
    "create_tables": ["maybe"],
    "audit_job": ["", " nightly", "nightly "],
    "run_key": ["", " 2026-12-01", "2026-12-01 "],
    "timestamp_attribute": ["event time"],
    "catalog_refresh_seconds": ["-1", "soon"],
    "bigtable_project": ["evpack_prod", "projects/evpack-prod"],
    "bigtable_instance": ["Evpack", "x"],
    "bigtable_table": ["catalog table", ""],
    "catalog_cache_entries": ["0", "-1", "1e5"],
    "window_seconds": ["0"],
    "allowed_lateness_seconds": ["-5"],
    "dedup_ttl_seconds": ["0"],
    "sink_timeout_seconds": ["0", "-5", "1e3"],
}


def metadata(pipeline: str) -> dict[str, Any]:
    return json.loads((DEPLOY / pipeline / "metadata.json").read_text(encoding="utf-8"))


def parameters(pipeline: str) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in metadata(pipeline)["parameters"]}


def evpack_flags() -> dict[str, argparse.Action]:
    """Every flag the project adds to Beam's, by destination."""
    parser = argparse.ArgumentParser()
    classes = (cls for sections in TEMPLATE_SECTIONS.values() for cls, _ in sections)
    for options in dict.fromkeys(classes):
        options._add_argparse_args(parser)
    return {a.dest: a for a in parser._actions if a.dest != "help"}


def complete_argv(pipeline: str) -> list[str]:
    """Flags that resolve for `pipeline`, local where the resolver checks files."""
    if pipeline == "batch":
        return [
            f"--input={ROOT / 'samples' / 'requests.jsonl'}",
            f"--catalog={CATALOG}",
            "--output=out",
        ]
    return [
        f"--catalog={CATALOG}",
        "--subscription=projects/evpack-prod/subscriptions/evpack-requests",
        "--prompts_topic=projects/evpack-prod/topics/evpack-prompts",
        "--dead_letter_topic=projects/evpack-prod/topics/evpack-dead-letters",
        "--bigquery_dataset=evpack-prod.evpack_audit",
    ]


def flags_read(pipeline: str, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The project flags `pipeline`'s resolver reads, observed while it resolves."""
    read: set[str] = set()
    original = PipelineOptions.__getattr__

    def spy(self: PipelineOptions, name: str) -> Any:
        read.add(name)
        return original(self, name)

    monkeypatch.setattr(PipelineOptions, "__getattr__", spy)
    RESOLVERS[pipeline](PipelineOptions(complete_argv(pipeline)))
    monkeypatch.undo()
    return read & set(evpack_flags())


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_metadata_declares_exactly_the_flags_the_command_takes(
    pipeline: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parity: a template takes every flag of `evpack batch` (`evpack stream`), among
    them all its resolver reads, and no other."""
    command = {"batch": BATCH_SECTIONS, "streaming": JOB_SECTIONS["streaming"]}[pipeline]
    taken = {flag.name for section in command for flag in section_flags(section)}
    assert set(parameters(pipeline)) == taken
    assert flags_read(pipeline, monkeypatch) <= taken


def test_the_launcher_takes_a_switch_as_the_template_passes_it() -> None:
    sections = TEMPLATE_SECTIONS["batch"]
    given = ["--input=gs://b/in.jsonl", "--overwrite=true", "--create_tables=false"]
    assert template_switches(given, sections) == [given[0], "--overwrite", given[2]]
    assert template_switches(["--overwrite=false"], sections) == []
    assert template_switches(["--overwrite"], sections) == ["--overwrite"]


def test_committed_metadata_is_what_the_options_generate(tmp_path: Path) -> None:
    """`make templates` writes each metadata.json from the options; `--check` fails on a
    stale copy (here: one help text edited by hand)."""
    assert templates.stale_templates() == [], "run `make templates`"
    assert templates.main(["--check"]) == 0
    for pipeline in PIPELINES:
        (tmp_path / pipeline).mkdir()
        (tmp_path / pipeline / "metadata.json").write_text(templates.metadata_text(pipeline))
    edited = tmp_path / "batch" / "metadata.json"
    edited.write_text(edited.read_text().replace("Requests to pack", "Requests"))
    assert templates.stale_templates(tmp_path) == [edited]
    assert templates.main(["--check", f"--deploy={tmp_path}"]) == 1


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_metadata_help_and_defaults_are_the_parsers(pipeline: str) -> None:
    flags = evpack_flags()
    for name, param in parameters(pipeline).items():
        action = flags[name]
        assert param["helpText"] == action.help, name
        assert param["label"], name
        if action.default is None:
            assert "defaultValue" not in param, name
        else:
            default = action.default
            expected = str(default).lower() if isinstance(default, bool) else str(default)
            assert param["defaultValue"] == expected, name


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_required_parameters_are_the_ones_the_pipeline_refuses_to_run_without(
    pipeline: str,
) -> None:
    argv = complete_argv(pipeline)
    RESOLVERS[pipeline](PipelineOptions(argv))  # complete: resolves
    for name, param in parameters(pipeline).items():
        without = [a for a in argv if not a.startswith(f"--{name}=")]
        if param["isOptional"]:
            continue
        assert without != argv, f"complete_argv lacks required --{name}"
        with pytest.raises(ValueError, match=name):
            RESOLVERS[pipeline](PipelineOptions(without))


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_every_parameter_has_a_regex_that_tells_valid_from_invalid(pipeline: str) -> None:
    flags = evpack_flags()
    for name, param in parameters(pipeline).items():
        (regex,) = param["regexes"]
        pattern = re.compile(regex)
        choices = flags[name].choices
        accepted = list(choices) if choices else VALID[name]
        for value in accepted:
            assert pattern.fullmatch(value), (name, value)
        for value in INVALID.get(name, []):
            assert not pattern.fullmatch(value), (name, value)
        if choices:
            assert not pattern.fullmatch("AUTO"), name
        if "defaultValue" in param:
            assert pattern.fullmatch(param["defaultValue"]), name


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_metadata_is_valid_for_the_dataflow_api(pipeline: str) -> None:
    """Every key and type is one Dataflow's TemplateMetadata knows; enums list the choices."""
    text = (DEPLOY / pipeline / "metadata.json").read_text(encoding="utf-8")
    template = TemplateMetadata.from_json(text, ignore_unknown_fields=False)
    assert template.name and template.description
    flags = evpack_flags()
    for param in template.parameters:
        choices = flags[param.name].choices
        if choices:
            assert param.param_type == ParameterType.ENUM, param.name
            assert [o.value for o in param.enum_options] == list(choices), param.name
        elif isinstance(flags[param.name].default, bool):
            assert param.param_type == ParameterType.BOOLEAN, param.name


def test_streaming_metadata_says_streaming() -> None:
    assert metadata("streaming")["streaming"] is True
    assert metadata("batch")["streaming"] is False


def _dockerfile() -> str:
    return (DEPLOY / "Dockerfile").read_text(encoding="utf-8")


def _arg(name: str) -> str:
    found = re.findall(rf"^ARG {name}=(\S+)$", _dockerfile(), flags=re.M)
    assert len(found) == 1, f"one ARG {name}=... expected in deploy/Dockerfile"
    return found[0]


def test_dockerfile_pins_the_beam_this_suite_runs_on_within_pyprojects_range() -> None:
    """pyproject.toml takes a range of Beam (a pipeline embedding the packer keeps its
    own); the image pins one, the one these tests ran on."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (beam_range,) = [d for d in project["dependencies"] if d.startswith("apache-beam")]
    found = re.fullmatch(r"apache-beam(\[[\w,]+\])?>=([\d.]+),<([\d.]+)", beam_range)
    assert found, beam_range

    def as_tuple(v: str) -> tuple[int, ...]:
        return tuple(int(part) for part in v.split("."))

    pinned = _arg("BEAM_VERSION")
    assert as_tuple(found.group(2)) <= as_tuple(pinned) < as_tuple(found.group(3))
    assert pinned == importlib.metadata.version("apache-beam")
    assert "apache/beam_python${PYTHON_VERSION}_sdk:${BEAM_VERSION}" in _dockerfile()
    assert '"apache-beam[gcp]==${BEAM_VERSION}"' in _dockerfile()  # pip keeps the image's


def test_every_install_here_takes_the_beam_the_image_pins() -> None:
    """pyproject.toml's range let a fresh `make test` take a Beam released after the flag
    table was made (its flags differ): the Makefile's installs, and the emulators' setup
    it runs, take the image's Beam, read from the Dockerfile (one place names it)."""
    pin = f"apache-beam[gcp]=={_arg('BEAM_VERSION')}"
    venv = "never-made-venv"  # -n: the recipes are printed, nothing is run or made
    targets = [f"{venv}/.bench-installed", f"{venv}/.emulators-ready"]
    planned = subprocess.run(
        ["make", "-n", "-B", f"VENV={venv}", *targets],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    installs = [line for line in planned if "pip install" in line and " -e " in line]
    assert len(installs) == 2 and all(f"'{pin}'" in line for line in installs), installs
    [setup] = [line for line in planned if ".ci/setup-emulators" in line]
    assert f"BEAM_PIN='{pin}'" in setup
    script = (ROOT / ".ci" / "setup-emulators").read_text(encoding="utf-8")
    assert re.search(r"pip install .*-e '\.\[[\w,]+\]' \$\{BEAM_PIN:\+\"\$BEAM_PIN\"\}", script)


def test_dockerfile_python_is_allowed_and_matches_the_launcher() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lower, upper = re.fullmatch(r">=([\d.]+),<([\d.]+)", project["requires-python"]).groups()
    version = _arg("PYTHON_VERSION")

    def as_tuple(v: str) -> tuple[int, ...]:
        return tuple(int(part) for part in v.split("."))

    assert as_tuple(lower) <= as_tuple(version) < as_tuple(upper)
    assert _arg("PYTHON_TAG") == version.replace(".", "")


def test_dockerfile_copies_existing_sources_and_launches_our_entry_point() -> None:
    text = _dockerfile()
    sources = [
        src
        for line in re.findall(r"^COPY (?!--from)(.+)$", text, flags=re.M)
        for src in line.split()[:-1]
    ]
    assert sources, "no COPY of the project's sources"
    for src in sources:
        assert (ROOT / src).exists(), f"deploy/Dockerfile copies missing {src}"
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]["packages"]["find"]["include"]
    for package in packages:
        assert f"{package.rstrip('*')}/" in sources, f"package {package} not copied"
    workdir = _arg("WORKDIR")
    (entry,) = re.findall(r"^ENV FLEX_TEMPLATE_PYTHON_PY_FILE=\$\{WORKDIR\}/(\S+)$", text, re.M)
    assert (ROOT / entry).is_file() and entry.startswith("pipelines/"), entry
    assert workdir.startswith("/")
    assert _arg("PIPELINE") in PIPELINES
    assert f"ENV {PIPELINE_ENV}=${{PIPELINE}}" in text
    assert re.search(r'^ENTRYPOINT \["/opt/apache/beam/boot"\]$', text, re.M)
    assert "/opt/google/dataflow/python_template_launcher" in text
    assert "pip install --no-cache-dir ." in text


def make_dry_run(target: str) -> str:
    """The commands `make -C deploy TARGET` would run, continuation lines joined."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    done = subprocess.run(
        [
            "make",
            "-n",
            "-s",
            "-C",
            str(DEPLOY),
            target,
            "PROJECT=evpack-prod",
            "REGION=europe-west1",
            "TAG=abc1234",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.replace("\\\n", " ")


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_launch_target_passes_valid_parameters_and_the_templates_image(pipeline: str) -> None:
    commands = make_dry_run(f"launch-{pipeline}")
    passed = dict(re.findall(r"--parameters=(\w+)=(\S+)", commands))
    image = passed.pop("sdk_container_image")
    declared = parameters(pipeline)
    assert set(passed) <= set(declared)
    assert {n for n, p in declared.items() if not p["isOptional"]} <= set(passed)
    for name, value in passed.items():
        assert re.fullmatch(declared[name]["regexes"][0], value), (name, value)
    (template_image,) = re.findall(r"--image=(\S+)", make_dry_run(f"template-{pipeline}"))
    assert image == template_image
    (built,) = re.findall(r"docker build .* -t (\S+)", make_dry_run(f"image-{pipeline}"))
    assert built == image and f"--build-arg PIPELINE={pipeline}" in make_dry_run(
        f"image-{pipeline}"
    )
    if pipeline == "streaming":
        assert "--enable-streaming-engine" in commands
    assert re.search(r"--max-workers=\d+", commands)


def test_service_account_gets_exactly_the_documented_roles() -> None:
    documented = re.findall(
        r"^(roles/\S+)", (DEPLOY / "worker-roles.txt").read_text(encoding="utf-8"), re.M
    )
    commands = make_dry_run("service-account")
    (loop,) = re.findall(r"for role in ([^;]+);", commands)
    assert loop.split() == documented
    assert "roles/dataflow.worker" in documented


@pytest.mark.parametrize(
    ("states", "code"),
    [
        (["JOB_STATE_PENDING", "JOB_STATE_RUNNING", "JOB_STATE_DONE"], 0),
        (["JOB_STATE_RUNNING", "JOB_STATE_FAILED"], 2),
        (["JOB_STATE_CANCELLED"], 2),
    ],
)
def test_wait_exits_with_the_jobs_final_state(tmp_path: Path, states: list[str], code: int) -> None:
    """`make -C deploy wait JOB=...` polls the job until it ends; only JOB_STATE_DONE
    passes. A fake `gcloud` (Dataflow cannot run here) answers the states in turn."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    (tmp_path / "states").write_text("\n".join(states) + "\n")
    fake = tmp_path / "gcloud"
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {tmp_path}/calls\n'
        f"head -n 1 {tmp_path}/states; sed -i 1d {tmp_path}/states\n"
    )
    fake.chmod(0o755)
    settings = [
        "JOB=2026-12-03_job",
        "PROJECT=evpack-prod",
        "REGION=europe-west1",
        "POLL_SECONDS=0",
    ]
    done = subprocess.run(
        ["make", "-s", "-C", str(DEPLOY), "wait", *settings],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"},
    )
    assert done.returncode == code, done.stderr
    assert done.stdout.strip() == f"2026-12-03_job: {states[-1]}"
    calls = (tmp_path / "calls").read_text().splitlines()
    assert len(calls) == len(states)
    assert calls[0].startswith("dataflow jobs describe 2026-12-03_job --project=evpack-prod")
