"""Flex-template entry point: submit one pipeline to Dataflow and return at once.

The Dataflow template launcher runs this file (`FLEX_TEMPLATE_PYTHON_PY_FILE`
in `deploy/Dockerfile`) with the template's parameters as flags, and expects it
to exit once the job is submitted: waiting for the job would time the launch
out. Which pipeline an image submits is fixed when it is built (the
Dockerfile's PIPELINE argument, read here as `EVPACK_PIPELINE`), because a
template made from a prebuilt image cannot set environment variables.

The image is also the worker image (`--sdk_container_image`) with the package
and Beam preinstalled, so the SDK is taken from the container, not staged.
"""

import logging
import os
import sys
from collections.abc import Sequence

from apache_beam.options.pipeline_options import PipelineOptions, SetupOptions, StandardOptions
from apache_beam.runners.runner import PipelineResult

from pipelines import batch, streaming
from pipelines.command import UsageError, run_command
from pipelines.options.flags import Section, parse_bool, section_flags
from pipelines.options.jobs import TEMPLATE_SECTIONS

PIPELINE_ENV = "EVPACK_PIPELINE"
PIPELINES = tuple(TEMPLATE_SECTIONS)

_LOG = logging.getLogger(__name__)


def dataflow_defaults(argv: list[str]) -> list[str]:
    """`argv` with the Dataflow runner and the container's SDK unless the flags say otherwise."""
    options = PipelineOptions(argv)
    extra = []
    if options.view_as(StandardOptions).runner is None:
        extra.append("--runner=DataflowRunner")
    if options.view_as(SetupOptions).sdk_location == "default":
        extra.append("--sdk_location=container")
    return [*argv, *extra]


def template_switches(argv: Sequence[str], sections: Sequence[Section]) -> list[str]:
    """`argv` with each switch the template passed as a boolean parameter (`--overwrite=true`,
    as Dataflow passes every parameter) given as the command takes it (`--overwrite`, or
    left out when false)."""
    switches = {f"--{f.name}" for s in sections for f in section_flags(s) if f.switch}
    found = []
    for arg in argv:
        name, _, value = arg.partition("=")
        if name not in switches or not value:
            found.append(arg)
        elif parse_bool(value):
            found.append(name)
    return found


def submit(pipeline: str, argv: list[str]) -> PipelineResult:
    """Build `pipeline` ("batch" or "streaming") from flags and submit it without waiting."""
    argv = dataflow_defaults(argv)
    if pipeline == "streaming":
        return streaming.run(argv, wait=False)
    if pipeline == "batch":
        result, _ = batch.start(argv, clear_outputs=False)
        return result
    raise UsageError(f"{PIPELINE_ENV} must be one of {', '.join(PIPELINES)}, got {pipeline!r}")


def main(argv: list[str] | None = None) -> int:
    """Submit the pipeline named by `EVPACK_PIPELINE`; bad flags exit 2 with the reason."""
    pipeline = os.environ.get(PIPELINE_ENV, "")
    sections = TEMPLATE_SECTIONS.get(pipeline, TEMPLATE_SECTIONS["batch"])
    args = template_switches(sys.argv[1:] if argv is None else argv, sections)

    def submitted(args: list[str]) -> int:
        submit(pipeline, args)
        _LOG.info("submitted the %s job", pipeline)
        return 0

    return run_command("evpack launch", __doc__, sections, submitted, args)


if __name__ == "__main__":
    sys.exit(main())
