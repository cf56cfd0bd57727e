"""Every command refuses what it cannot do before anything runs: exit 2 and one line.

Unknown or misspelt flags (Beam alone would only log a warning and run with the
default), a folder as input, an output that cannot be written, an unsupported
runner and missing Google Cloud credentials.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import cli
from pipelines.command import (
    UsageError,
    check_flags,
    declared_flags,
    flag_parser,
)
from pipelines.options.jobs import BATCH_SECTIONS
from pipelines.startup import closest, unknown_flag_message
from tests.strategies import examples

SAMPLES = Path(__file__).parent.parent / "samples"
BATCH = [
    "batch",
    "--input",
    str(SAMPLES / "requests.jsonl"),
    "--catalog",
    str(SAMPLES / "catalog.jsonl"),
]


def refusal(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one stderr line of a command that must exit 2."""
    assert cli.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_a_misspelt_command_is_named_with_the_closest_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["bach", "--input", "x"]) == 2
    assert capsys.readouterr().err.startswith("evpack: unknown command 'bach'; did you mean batch?")
    assert cli.main(["zzz"]) == 2
    assert "did you mean" not in capsys.readouterr().err


def test_beams_known_warnings_are_filtered_and_others_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    from pipelines.command import KNOWN_BEAM_WARNINGS, configure_logging

    configure_logging(logging.INFO)
    configure_logging(logging.INFO)  # every command configures: one filter, not two
    core = logging.getLogger("apache_beam.transforms.core")
    assert len(core.filters) == 1
    with caplog.at_level(logging.WARNING):
        for known in KNOWN_BEAM_WARNINGS:
            core.warning(known + " of %s", "SomeFn")
        core.warning("Using a DoFn that is not deterministic")
    assert [r.getMessage() for r in caplog.records] == ["Using a DoFn that is not deterministic"]


def test_beams_copy_of_a_filesystem_refusal_is_dropped_and_other_errors_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import errno
    import logging

    from apache_beam.io.filesystem import BeamIOError

    from pipelines.command import configure_logging

    configure_logging(logging.INFO)
    configure_logging(logging.INFO)
    common = logging.getLogger("apache_beam.runners.common")
    assert len(common.filters) == 1
    with caplog.at_level(logging.ERROR):
        for error in (
            OSError(errno.EROFS, "Read-only file system", "/out/run"),
            BeamIOError("src and dst files do not exist. src: /out/run/a, dst: /out/run/b"),
            Exception(
                "Encountered exceptions in finalize_write: "
                "[OSError(OSError(30, 'Read-only file system'))]"
            ),
            Exception("Encountered exceptions in finalize_write: [ValueError('a bug')]"),
            OSError(errno.ECONNREFUSED, "Connection refused"),
            ValueError("a bug"),
        ):
            try:
                raise error
            except Exception as raised:
                common.exception(RuntimeError(f"{raised} [while running 'Write']"))
    kept = [r.getMessage() for r in caplog.records]
    assert kept == [
        "Encountered exceptions in finalize_write: [ValueError('a bug')] [while running 'Write']",
        "[Errno 111] Connection refused [while running 'Write']",
        "a bug [while running 'Write']",
    ]


def test_version_is_the_installed_packages(capsys: pytest.CaptureFixture[str]) -> None:
    from packer.version import BUILDER_VERSION

    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == BUILDER_VERSION.replace("evidence-packer-", "evpack ")


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_every_command_refuses_an_unknown_flag(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [command, "load"] if command == "catalog" else [command]
    err = refusal([*args, "--no_such_flag", "1"], capsys)
    assert err.startswith(f"evpack {command}") and "unknown flag --no_such_flag" in err


@pytest.mark.parametrize(
    ("args", "typo", "meant"),
    [
        (["batch"], "--prompt-format", "--prompt_format"),
        (["batch"], "--ouptut", "--output"),
        (["verify"], "--requets", "--requests"),
        (["replay"], "--cataloge", "--catalog"),
        (["stream"], "--subscripton", "--subscription"),
        (["verify-stream"], "--prompt_ttl_second", "--prompt_ttl_seconds"),
        (["tables"], "--datset", "--dataset"),
        (["report"], "--audti", "--audit"),
        (["schema"], "--chek", "--check"),
        (["catalog", "load"], "--catalg", "--catalog"),
        (["convert"], "--inptu", "--input"),
    ],
)
def test_a_misspelt_flag_names_the_closest_real_one(
    args: list[str], typo: str, meant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = refusal([*args, typo, "x"], capsys)
    assert f"unknown flag {typo}" in err and f"did you mean {meant}?" in err


@pytest.mark.parametrize("typo", ["--bugdet", "--budget", "--budget=800"])
def test_a_budget_typo_names_the_budget_flags_never_a_beam_flag(
    typo: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--budget` once suggested Beam's `--update`, a flag `--help` does not describe."""
    err = refusal([*BATCH, typo], capsys)
    assert err.endswith(
        "did you mean --input_limit, --max_evidence_tokens or --reserved_answer?"
    ), err
    beam = set(declared_flags(flag_parser(()))) - set(
        declared_flags(flag_parser(BATCH_SECTIONS, beam=False))
    )
    for flag in ("--updat", "--runer", "--projec"):
        message = refusal([*BATCH, flag, "x"], capsys)
        assert not {word.rstrip("?,") for word in message.split()} & beam, message


def test_beam_flags_pass_and_a_flag_of_another_command_does_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --answers is a flag of verify, not of batch: refused, not silently ignored
    err = refusal([*BATCH, "--output", str(tmp_path), "--answers", "a.jsonl"], capsys)
    assert "unknown flag --answers" in err
    # Beam's own flags pass the check (the run then goes as far as the catalog)
    args = [*BATCH, "--output", str(tmp_path / "o"), "--direct_num_workers", "1"]
    args += ["--max_record_bytes", "not-a-number"]
    assert "--max_record_bytes" in refusal(args, capsys)


def test_a_folder_as_input_is_refused_with_the_glob(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["batch", "--input", str(SAMPLES), "--catalog", str(SAMPLES / "catalog.jsonl")]
    err = refusal([*args, "--output", str(tmp_path)], capsys)
    assert "is a folder" in err and f"{SAMPLES}/*.jsonl" in err


def test_an_output_that_cannot_be_written_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert "is a file" in refusal([*BATCH, "--output", str(a_file)], capsys)
    assert "cannot be written" in refusal([*BATCH, "--output", str(a_file / "sub")], capsys)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK) and os.geteuid() == 0:
            target = "/proc/evpack-out"  # root writes anywhere but a pseudo filesystem
        else:
            target = str(locked / "out")
        assert "cannot be written" in refusal([*BATCH, "--output", target], capsys)
    finally:
        locked.chmod(0o700)
    assert not list(tmp_path.glob("**/*.parquet"))


def test_convert_refuses_an_output_it_cannot_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    given = ["convert", "--input", str(SAMPLES / "requests.jsonl"), "--output"]
    assert "is a file" in refusal([*given, str(a_file / "out.jsonl")], capsys)
    assert "cannot be written" in refusal([*given, "/proc/evpack/out.jsonl"], capsys)
    assert "is a folder" in refusal([*given, str(tmp_path)], capsys)


@pytest.mark.parametrize("runner", ["DaskRunner", "FlinkRunner", "PrismRunner"])
def test_an_unsupported_runner_is_refused(
    runner: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = refusal([*BATCH, "--output", str(tmp_path), "--runner", runner], capsys)
    assert f"--runner={runner} is not supported" in err and "DataflowRunner" in err


def test_missing_credentials_are_one_line_with_the_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("BIGQUERY_EMULATOR_HOST", "PUBSUB_EMULATOR_HOST", "BIGTABLE_EMULATOR_HOST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "no-key.json"))
    monkeypatch.setenv("NO_GCE_CHECK", "true")  # never ask a metadata server from a test
    err = refusal(["tables", "--dataset", "p.d"], capsys)
    assert "no Google Cloud credentials found" in err and "GOOGLE_APPLICATION_CREDENTIALS" in err


def test_the_module_entry_point_reads_sys_argv() -> None:
    """`python -m pipelines.streaming --help` lists the flags (it printed an empty usage)."""
    out = subprocess.run(
        [sys.executable, "-m", "pipelines.streaming", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--subscription" in out and "--window_seconds" in out


def test_closest_reads_dashes_as_underscores_and_declines_far_guesses() -> None:
    known = ["--prompt_format", "--output", "--input"]
    assert closest("--prompt-format=x", known) == "--prompt_format"
    assert closest("--zzzzzz", known) is None
    assert "see --help" in unknown_flag_message(["--zzzzzz"], known)
    assert "unexpected argument" in unknown_flag_message(["stray"], known)


@given(
    st.text(
        alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=30
    )
)
@settings(max_examples=examples(200), deadline=None)
def test_any_flag_batch_does_not_declare_is_refused(name: str) -> None:
    """Whatever follows `--`: a flag batch or Beam declares passes, anything else is refused."""
    flag = f"--{name}"
    known = batch_flags()
    try:
        check_flags([flag, "1"], BATCH_SECTIONS)
    except UsageError as err:
        assert flag.split("=", 1)[0] not in known or "argument" in str(err)
    else:
        assert flag.split("=", 1)[0] in known


def batch_flags() -> set[str]:
    """Every flag `evpack batch` accepts: its own and Beam's standard options."""
    return set(declared_flags(flag_parser(BATCH_SECTIONS)))


def test_a_command_whose_extra_is_missing_names_it_in_one_line() -> None:
    """`evpack report` on an install without the report extra (duckdb hidden here)."""
    code = (
        "import sys; sys.modules['duckdb'] = None\n"
        "from pipelines import cli\n"
        "sys.exit(cli.main(['report', '--audit', 'x', '--out', 'y']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "evpack report: needs the report extra (duckdb is not installed): "
        "pip install 'evidence-packer[report]'"
    ]


def test_each_extra_module_is_brought_by_that_extra() -> None:
    import importlib.metadata
    import re
    import tomllib

    project = tomllib.loads((SAMPLES.parent / "pyproject.toml").read_text(encoding="utf-8"))
    extras = project["project"]["optional-dependencies"]
    core = {re.split(r"[\[<>=!; ]", d)[0] for d in project["project"]["dependencies"]}
    by_module = importlib.metadata.packages_distributions()
    for module, extra in cli.EXTRAS.items():
        brought = {re.split(r"[\[<>=!; ]", d)[0] for d in extras[extra]}
        assert set(by_module[module]) & brought and not set(by_module[module]) & core, module


def test_the_jobs_never_load_the_report_extra() -> None:
    """What the Dataflow workers and the launcher import: no report dependency."""
    code = (
        "import sys, pipelines.cli, pipelines.batch, pipelines.streaming, pipelines.launch,"
        " pipelines.verification.verify, pipelines.verification.replay, pipelines.tables,"
        " pipelines.convert;"
        f"print(sorted(m for m in {sorted(cli.EXTRAS)!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_storage_emulator_skips_the_credential_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    """With `STORAGE_EMULATOR_HOST`, Beam's `gs://` client is built at once, anonymously:
    Application Default Credentials are never looked up (that retried ~20 s here)."""
    import google.auth
    import google.auth.exceptions
    from apache_beam.internal.gcp import auth
    from apache_beam.io.gcp.gcsio import create_storage_client
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines.command import skip_credentials_for_storage_emulator

    calls: list[object] = []

    def looked_up(*args: object, **kwargs: object) -> None:
        calls.append(args)
        raise google.auth.exceptions.DefaultCredentialsError("none here")

    monkeypatch.setattr(google.auth, "default", looked_up)
    monkeypatch.setattr(auth._Credentials, "_credentials_init", False)
    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    assert not skip_credentials_for_storage_emulator()
    assert auth._Credentials._credentials_init is False
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "http://localhost:9")
    assert skip_credentials_for_storage_emulator()
    client = create_storage_client(PipelineOptions([]))
    assert client._credentials.__class__.__name__ == "AnonymousCredentials"
    assert calls == []
