"""Both pipelines translate for the DataflowRunner, offline.

`--dry_run=True` (Beam's TestOptions) makes `DataflowRunner.run` build the
whole job, pipeline proto and job request, and return it without submitting:
no credentials and no network. The job is built through the flex-template
entry point (`pipelines.launch.submit`), exactly as the launcher would.
"""

from pathlib import Path

import pytest
from apache_beam.options.pipeline_options import DebugOptions, StandardOptions
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.runners.dataflow.internal.apiclient import Job
from google.cloud import dataflow

from pipelines.launch import PIPELINE_ENV, dataflow_defaults, main, submit

ROOT = Path(__file__).resolve().parents[1]
IMAGE = "europe-west1-docker.pkg.dev/evpack-prod/evpack/evpack-streaming:test"
DATAFLOW = [
    "--project=evpack-prod",
    "--region=europe-west1",
    "--temp_location=gs://evpack-prod-dataflow/tmp",
    f"--sdk_container_image={IMAGE}",
    "--dry_run=True",
]


def dry_run(pipeline: str, flags: list[str]) -> Job:
    result = submit(pipeline, [*DATAFLOW, *flags])
    return result.job


def top_level_steps(job: Job) -> list[str]:
    """The unique names of the transforms the pipeline applies at its top level."""
    components = job.proto_pipeline.components
    (root,) = job.proto_pipeline.root_transform_ids
    return [components.transforms[t].unique_name for t in components.transforms[root].subtransforms]


def docker_images(job: Job) -> set[str]:
    images = set()
    for env in job.proto_pipeline.components.environments.values():
        payload = beam_runner_api_pb2.DockerPayload.FromString(env.payload)
        images.add(payload.container_image)
    return images


def test_defaults_are_the_dataflow_runner_and_the_containers_sdk() -> None:
    argv = dataflow_defaults(["--catalog=x"])
    assert argv == ["--catalog=x", "--runner=DataflowRunner", "--sdk_location=container"]
    assert dataflow_defaults(["--runner=X", "--sdk_location=/sdk.tgz"]) == [
        "--runner=X",
        "--sdk_location=/sdk.tgz",
    ]


CATALOG = f"--catalog={ROOT / 'samples' / 'catalog.jsonl'}"
BIGTABLE = [
    "--bigtable_instance=evpack-catalog",
    "--bigtable_table=catalog",
]
CATALOG_FLAGS = {
    "side_input": [CATALOG, "--catalog_mode=side_input"],
    "join": [CATALOG, "--catalog_mode=join"],
    "bigtable": BIGTABLE,
}


def all_steps(job: Job) -> set[str]:
    return {t.unique_name for t in job.proto_pipeline.components.transforms.values()}


@pytest.mark.parametrize("mode", CATALOG_FLAGS)
def test_batch_translates_for_dataflow_in_each_catalog_mode(mode: str) -> None:
    job = dry_run(
        "batch",
        [
            f"--input={ROOT / 'samples' / 'requests.jsonl'}",
            *CATALOG_FLAGS[mode],
            "--output=gs://evpack-prod-data/out/run1",
            "--event_time=2026-03-01T12:00:00Z",
        ],
    )
    assert job.proto.type == dataflow.JobType.JOB_TYPE_BATCH
    steps = top_level_steps(job)
    assert ("ReadCatalog" in steps) == (mode == "side_input")
    assert ("Pack/JoinCatalog/ByDocument" in all_steps(job)) == (mode == "join")
    for step in (
        "ReadRequests",
        "Parse",
        "Pack",
        "WritePrompts",
        "WriteManifests",
        "WriteExclusions",
        "WriteCounts",
        "WriteDeadLetters",
    ):
        assert step in steps
    assert docker_images(job) == {IMAGE}


def test_batch_to_bigquery_and_pubsub_translates_with_load_jobs() -> None:
    job = dry_run(
        "batch",
        [
            f"--input={ROOT / 'samples' / 'requests.jsonl'}",
            CATALOG,
            "--output=gs://evpack-prod-data/out/run1",
            "--bigquery_dataset=evpack-prod.evpack_audit",
            "--prompts_topic=projects/evpack-prod/topics/evpack-prompts",
            "--create_tables=false",
        ],
    )
    steps = all_steps(job)
    for table in ("WriteManifests", "WriteExclusions", "WriteCounts", "WriteDeadLetters"):
        assert f"{table}/Load" in steps, table
        assert f"{table}/Insert" not in steps, table
    # prompts are staged with the run and published by its commit step, never before it
    top = top_level_steps(job)
    assert "StagePrompts" in top and "Commit" in top
    assert "PublishPrompts" not in top and "WritePrompts" not in top


@pytest.mark.parametrize("mode", ["side_input", "bigtable"])
def test_streaming_translates_for_dataflow_with_streaming_engine(mode: str) -> None:
    job = dry_run(
        "streaming",
        [
            *CATALOG_FLAGS[mode],
            "--subscription=projects/evpack-prod/subscriptions/evpack-requests",
            "--prompts_topic=projects/evpack-prod/topics/evpack-prompts",
            "--dead_letter_topic=projects/evpack-prod/topics/evpack-dead-letters",
            "--bigquery_dataset=evpack-prod.evpack_audit",
            "--create_tables=false",
            "--enable_streaming_engine",
        ],
    )
    assert job.proto.type == dataflow.JobType.JOB_TYPE_STREAMING
    assert job.options.view_as(StandardOptions).streaming
    assert "enable_streaming_engine" in job.options.view_as(DebugOptions).experiments
    steps = top_level_steps(job)
    for step in (
        "ReadRequests",
        "Parse",
        "Pack",
        "PublishPrompts",
        "WriteManifests",
        "WriteExclusions",
        "WriteCounts",
        "PublishDeadLetters",
    ):
        assert step in steps
    unbounded = [
        name
        for name, pcoll in job.proto_pipeline.components.pcollections.items()
        if pcoll.is_bounded == beam_runner_api_pb2.IsBounded.UNBOUNDED
    ]
    assert unbounded, "the Pub/Sub read must be unbounded"
    assert docker_images(job) == {IMAGE}


def test_an_unknown_pipeline_is_refused() -> None:
    with pytest.raises(ValueError, match="batch, streaming"):
        submit("nightly", DATAFLOW)


def test_an_image_without_a_pipeline_exits_2_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(PIPELINE_ENV, raising=False)
    assert main(DATAFLOW) == 2
    assert f"{PIPELINE_ENV} must be one of batch, streaming" in capsys.readouterr().err
