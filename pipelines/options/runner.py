"""The runner a command runs on: Beam's in-process runners locally, or Dataflow.

Each job has its local runner: batch Beam's `FnApiRunner` (the engine the
DirectRunner itself uses for batch), streaming the `BundleBasedDirectRunner`.
The plain DirectRunner first tries the Prism runner, whose binary is
downloaded at run time; offline that fails, so it is pinned to them.
"""

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from pipelines.command import UsageError

BATCH_RUNNER = "FnApiRunner"
"""The local runner of batch jobs (batch, verify, replay)."""
STREAMING_RUNNER = "BundleBasedDirectRunner"
"""The local runner of streaming jobs (stream, verify-stream)."""

_DIRECT_NAMES = {None, "DirectRunner", "SwitchingDirectRunner"}
"""Runner names that would make Beam try to download the Prism runner first."""

SUPPORTED_RUNNERS = frozenset(
    {"DirectRunner", "SwitchingDirectRunner", BATCH_RUNNER, STREAMING_RUNNER, "DataflowRunner"}
)
"""Runners this project is tested on: Beam's in-process local runners (`FnApiRunner` for
batch, `BundleBasedDirectRunner` for streaming; `DirectRunner` is pinned to them) and
Dataflow (its job request is built in the tests). Rejected: passing others through.
Beam's Dask runner, tried, fails after writing nothing (`Delete operation failed`);
the Prism, Flink and Spark runners download or need a cluster and are not verified."""


def check_runner(options: PipelineOptions) -> None:
    """Refuse a runner this project does not support, naming the supported ones."""
    runner = options.view_as(StandardOptions).runner
    if runner is None:
        return
    name = runner if isinstance(runner, str) else type(runner).__name__
    if name.rsplit(".", 1)[-1] not in SUPPORTED_RUNNERS:
        raise UsageError(
            f"--runner={name} is not supported; use the default local runner (DirectRunner: "
            "FnApiRunner for batch, BundleBasedDirectRunner for streaming) or DataflowRunner"
        )


def pin_local_runner(options: PipelineOptions, local_runner: str) -> None:
    """Refuse an unsupported runner, then replace the Prism-first DirectRunner by an
    in-process runner; others stay."""
    check_runner(options)
    standard = options.view_as(StandardOptions)
    if standard.runner in _DIRECT_NAMES:
        standard.runner = local_runner
