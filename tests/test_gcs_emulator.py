"""`gs://` end to end on the Cloud Storage emulator: the batch job reads its input and
catalog from a bucket and commits its outputs there; `verify`, `replay` and `report`
read that run back from the bucket.

Every Beam part on this path is pointed at the emulator by `STORAGE_EMULATOR_HOST`
alone: Beam's `GCSFileSystem` builds its client with `storage.Client` (or, without
credentials, `Client.create_anonymous_client()`), and the client honours the variable.
With the variable set the commands skip Beam's lookup of Application Default
Credentials (`pipelines.command.skip_credentials_for_storage_emulator`), which
would retry for about 20 s before connecting anonymously; on Dataflow the workers'
service account takes that place.
Not Beam, but on the same path: pyarrow's own `gs://` filesystem (Arrow's C++
Cloud Storage client) ignores `STORAGE_EMULATOR_HOST` and waits on the metadata
server for credentials, so audit Parquet is read back through Beam's filesystems
(`transforms.record_files.read_parquet`); `pq.read_table("gs://...")` would hang here.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest
from google.cloud import storage

from pipelines import report
from pipelines.batch import RunFailed, run
from pipelines.batch import main as batch_main
from pipelines.verification import replay, verify
from tests.batch_run import SAMPLES, flags, read_outputs
from tests.emulators import Emulators

pytestmark = pytest.mark.emulators

BUCKET = "evpack-runs"
ANSWERS = SAMPLES / "answers_anthropic_good_and_bad.jsonl"
EVENT_TIME = "--event_time=2026-07-01T00:00:00Z"


def _gs(path: Path) -> str:
    """Where `inputs` puts a sample file in the bucket."""
    return f"gs://{BUCKET}/in/{path.name}"


def _upload(client: storage.Client, path: Path, name: str) -> str:
    client.bucket(BUCKET).blob(name).upload_from_filename(str(path))
    return f"gs://{BUCKET}/{name}"


def _names(client: storage.Client, prefix: str) -> list[str]:
    return sorted(b.name for b in client.list_blobs(BUCKET, prefix=prefix))


def _download(client: storage.Client, prefix: str, to: Path) -> Path:
    """Every object under gs://BUCKET/prefix as files under `to`, for the local readers."""
    for name in _names(client, prefix):
        target = to / name.removeprefix(prefix).lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        client.bucket(BUCKET).blob(name).download_to_filename(str(target))
    return to


def _argv(requests: str, catalog: str, output: str, *extra: str) -> list[str]:
    local = flags(SAMPLES / "requests.jsonl", Path("unused"), *extra)
    given = {"--input": requests, "--catalog": catalog, "--output": output}
    return [
        *(f"{k}={v}" for k, v in given.items()),
        *(a for a in local if a.split("=")[0] not in given),
        "--prompt_format=anthropic_batch",
        EVENT_TIME,
    ]


@pytest.fixture(scope="module")
def client(gcp_emulators: Emulators) -> storage.Client:
    made = storage.Client(project=gcp_emulators.project)
    made.create_bucket(BUCKET)
    return made


@pytest.fixture(scope="module")
def inputs(client: storage.Client) -> dict[str, str]:
    return {
        "requests": _upload(client, SAMPLES / "requests.jsonl", "in/requests.jsonl"),
        "catalog": _upload(client, SAMPLES / "catalog.jsonl", "in/catalog.jsonl"),
        "answers": _upload(client, ANSWERS, "results/answers.jsonl"),
    }


@pytest.fixture(scope="module")
def gs_run(client: storage.Client, inputs: dict[str, str]) -> Iterator[str]:
    output = f"gs://{BUCKET}/runs/one"
    run(_argv(inputs["requests"], inputs["catalog"], output))
    yield output


def test_a_gs_run_commits_the_same_outputs_as_a_local_run(
    client: storage.Client, gs_run: str, tmp_path: Path
) -> None:
    local = tmp_path / "local"
    run(_argv(str(SAMPLES / "requests.jsonl"), str(SAMPLES / "catalog.jsonl"), str(local)))
    names = _names(client, "runs/one/")
    assert {n.split("/")[2] for n in names} == {
        ".run.json",  # the commit's record of the run's files
        "prompts",
        "manifests",
        "exclusions",
        "exclusion_counts",
        "dead_letters",
        "runs",
    }
    assert not [n for n in names if "/.tmp-" in n or "beam-temp" in n]  # staging is gone
    from_bucket = read_outputs(_download(client, "runs/one", tmp_path / "bucket"))
    from_disk = read_outputs(local)
    assert from_bucket.prompts  # the comparison is not between two empty runs
    for name in ("prompts", "manifests", "exclusions", "counts"):
        assert getattr(from_bucket, name) == getattr(from_disk, name), name
    # a dead letter names the file it came from, and when it was refused
    assert [(d["stage"], d["payload"]) for d in from_bucket.dead_letters] == [
        (d["stage"], d["payload"]) for d in from_disk.dead_letters
    ]
    assert {d["source"] for d in from_bucket.dead_letters} == {_gs(SAMPLES / "requests.jsonl")}


def test_a_failed_gs_run_commits_nothing_and_names_what_it_left(
    client: storage.Client, inputs: dict[str, str], tmp_path: Path
) -> None:
    output = f"gs://{BUCKET}/runs/failing"
    run(_argv(inputs["requests"], inputs["catalog"], output))
    before = {b.name: b.md5_hash for b in client.list_blobs(BUCKET, prefix="runs/failing/")}
    rows = (SAMPLES / "catalog.jsonl").read_text().splitlines()
    broken = tmp_path / "catalog.jsonl"
    broken.write_text("\n".join([rows[0].replace('"deleted": false', '"deleted": 7'), *rows[1:]]))
    catalog = _upload(client, broken, "in/broken-catalog.jsonl")
    argv = _argv(inputs["requests"], catalog, output, "--catalog_mode=join", "--overwrite")
    with pytest.raises(RunFailed, match=r"nothing was committed under gs://") as failed:
        run(argv)
    after = {b.name: b.md5_hash for b in client.list_blobs(BUCKET, prefix="runs/failing/")}
    staged = {name for name in after if "/.tmp-" in name}
    assert staged  # the run record at least was written before the pack step failed
    staging = next(iter(staged)).split("/")[2]
    assert f"{output}/{staging}/" in str(failed.value)
    assert {k: v for k, v in after.items() if k not in staged} == before  # earlier run intact
    assert len(before) >= 6  # one file per output at least


def test_verify_replay_and_report_read_the_run_from_the_bucket(
    client: storage.Client, gs_run: str, inputs: dict[str, str], tmp_path: Path
) -> None:
    verify.run([f"--answers={inputs['answers']}", f"--run={gs_run}", "--runner=FnApiRunner"])
    checked = [n for n in _names(client, "runs/one/verifications/") if n.endswith(".parquet")]
    assert checked
    replayed = f"gs://{BUCKET}/replays/one"
    code = replay.main(
        [
            f"--run={gs_run}",
            f"--input={inputs['requests']}",
            f"--catalog={inputs['catalog']}",
            f"--config={SAMPLES / 'config.yaml'}",
            f"--output={replayed}",
            "--prompt_format=anthropic_batch",
            "--runner=FnApiRunner",
        ]
    )
    assert code == 0  # every stored packet replays to the same bytes
    assert [n for n in _names(client, "replays/one/replay/") if n.endswith(".parquet")]
    page = report.write_report(gs_run, tmp_path / "report")
    text = page.read_text(encoding="utf-8")
    answers = len(ANSWERS.read_text().splitlines())
    assert f"{answers} answers" in text  # the verifications were read from the bucket
    assert gs_run in text
    assert f"<td>{inputs['requests']} (jsonl, shape auto)</td>" in text  # the run record


def test_a_report_on_a_missing_bucket_is_one_line(
    client: storage.Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = report.main(["--audit", "gs://no-such-bucket/run", "--out", str(tmp_path)])
    assert code == 2
    assert "--audit gs://no-such-bucket/run cannot be listed" in capsys.readouterr().err


def test_a_gs_overwrite_sets_the_earlier_verifications_aside_and_patterns_are_refused(
    client: storage.Client, inputs: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """What belongs to a run (its verifications) goes with it on a bucket too; a prefix
    holding a pattern character is refused before anything is written there."""
    output = f"gs://{BUCKET}/runs/verified"
    run(_argv(inputs["requests"], inputs["catalog"], output))
    verify.run([f"--answers={inputs['answers']}", f"--run={output}", "--runner=FnApiRunner"])
    assert _names(client, "runs/verified/verifications/")
    run(_argv(inputs["requests"], inputs["catalog"], output, "--overwrite"))
    assert not _names(client, "runs/verified/verifications/")
    assert not _names(client, "runs/verified/.tmp-")
    argv = _argv(inputs["requests"], inputs["catalog"], f"gs://{BUCKET}/runs/exp[1]")
    assert batch_main(argv) == 2
    assert "which file matching reads as a pattern" in capsys.readouterr().err
    assert not _names(client, "runs/exp")
