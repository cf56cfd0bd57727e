"""The settings of a batch or streaming job, resolved from the flags of each concern.

One resolver (`resolve_job`) checks what both jobs read, in one order: every
bounded number, where outputs go, the catalog, the packing config. `resolve`
(batch, and `evpack replay`) adds the request files and the event time,
`resolve_streaming` the request stream. `JOB_SECTIONS` lists the flags each
job reads, for its `--help`, its strict flag check and its flex template.
Rejected: a second resolver in the streaming job, which repeated the shared
checks in its own order and kept a hand list of the shared flags it read.
"""

import json
from dataclasses import dataclass
from datetime import datetime

from apache_beam.options.pipeline_options import PipelineOptions

from packer.parsing.names import FileFormat, InputShape
from pipelines.options.catalog import CatalogOptions, resolve_catalog
from pipelines.options.config_file import BUDGET_FLAGS, load_config
from pipelines.options.flags import Section, check_numbers, require
from pipelines.options.input import GateOptions, InputOptions, resolve_input
from pipelines.options.packing import PackingOptions, parse_event_time
from pipelines.options.sinks import (
    SinkOptions,
    check_inputs_outside,
    job_name,
    resolve_sinks,
    resource_name,
    run_folders,
    run_key,
)
from pipelines.options.stored_run import StoredRunOptions
from pipelines.options.stream import StreamOptions, StreamSource, resolve_stream
from schemas import PackingConfig
from schemas.run import new_run_id
from transforms.catalog.factory import CatalogSource
from transforms.sinks import Sinks

JOB_SECTIONS: dict[str, tuple[Section, ...]] = {
    "batch": (
        (InputOptions, None),
        (SinkOptions, None),
        (CatalogOptions, None),
        (PackingOptions, None),
    ),
    "streaming": (
        (StreamOptions, None),
        (
            SinkOptions,
            frozenset(
                {
                    "output",
                    "prompts_topic",
                    "bigquery_dataset",
                    "audit_sink",
                    "create_tables",
                    "sink_timeout_seconds",
                }
            ),
        ),
        (CatalogOptions, None),
        (PackingOptions, frozenset({"config", "prompt_format", "model", *BUDGET_FLAGS})),
        (InputOptions, frozenset({"max_record_bytes"})),
    ),
}
"""The flags each job reads (`resolve`, `resolve_streaming`), by the name of its template."""

BATCH_SECTIONS = (*JOB_SECTIONS["batch"], (GateOptions, None))
"""The flags `evpack batch` reads: the job's, and when its run fails."""
TEMPLATE_SECTIONS: dict[str, tuple[Section, ...]] = {
    "batch": BATCH_SECTIONS,
    "streaming": JOB_SECTIONS["streaming"],
}
"""The flags each job's flex template declares and its launcher accepts: all its command
reads, so a job on Dataflow is run as `evpack batch` / `evpack stream` is (a test)."""
REPLAY_SECTIONS = ((StoredRunOptions, None), *JOB_SECTIONS["batch"])
"""The flags `evpack replay` reads: the run to replay, and the batch job's."""


@dataclass(frozen=True)
class JobSettings:
    """What both jobs read: where outputs go, the catalog, the packing config, the
    record limit."""

    sinks: Sinks
    create_tables: bool
    catalog: CatalogSource
    config: PackingConfig
    max_record_bytes: int
    run_id: str
    """This run's id (`schemas.run.new_run_id`), made once when the flags are resolved."""
    sink_timeout_seconds: int
    """How long a named sink may stay unreachable (`--sink_timeout_seconds`)."""


@dataclass(frozen=True)
class Settings(JobSettings):
    """Validated settings of one batch run."""

    input: str
    input_format: FileFormat
    input_shape: InputShape
    output: str
    event_time: datetime
    job: str
    """The job this run is a run of (`--audit_job`, by default `--output`)."""
    run_key: str
    """The part of its job this run fills (`--run_key`, by default `--output`)."""


@dataclass(frozen=True)
class StreamSettings(JobSettings):
    """Validated settings of one streaming job."""

    stream: StreamSource


def resolve_job(options: PipelineOptions, *, streaming: bool) -> JobSettings:
    """Check the flags both jobs read, and return their settings."""
    check_numbers(options, JOB_SECTIONS["streaming" if streaming else "batch"])
    window = options.view_as(StreamOptions).window_seconds if streaming else None
    sinks = resolve_sinks(options, window_seconds=window)
    if streaming:  # its prompts are published, never written to files
        resource_name(sinks.prompts_topic, "prompts_topic", "topics")
    packing = options.view_as(PackingOptions)
    return JobSettings(
        sinks=sinks,
        create_tables=options.view_as(SinkOptions).create_tables,
        catalog=resolve_catalog(options, streaming=streaming),
        config=load_config(
            packing.config,
            packing.prompt_format,
            packing.model,
            {name: getattr(packing, name) for name in BUDGET_FLAGS},
        ),
        max_record_bytes=options.view_as(InputOptions).max_record_bytes,
        run_id=new_run_id(),
        sink_timeout_seconds=options.view_as(SinkOptions).sink_timeout_seconds,
    )


def resolve(options: PipelineOptions) -> Settings:
    """Check the batch job's flags and return the settings of this run."""
    pattern, file_format = resolve_input(options)
    job = resolve_job(options, streaming=False)
    output = require(options.view_as(SinkOptions).output, "output", "out/run1").rstrip("/")
    check_inputs_outside(
        [pattern, job.catalog.pattern], run_folders(output), "move it out of --output"
    )
    return Settings(
        **vars(job),
        input=pattern,
        input_format=file_format,
        input_shape=options.view_as(InputOptions).input_shape,
        output=output,
        event_time=parse_event_time(options.view_as(PackingOptions).event_time),
        job=job_name(options, output),
        run_key=run_key(options, output),
    )


def resolve_streaming(options: PipelineOptions) -> StreamSettings:
    """Check the streaming job's flags, and that the catalog loads now rather than at the
    first request."""
    job = resolve_job(options, streaming=True)
    return StreamSettings(**vars(job), stream=resolve_stream(options))


def settings_summary(settings: Settings) -> str:
    """The settings as one JSON line, logged at start so a run can be reproduced."""
    return json.dumps(
        {
            "input": settings.input,
            "input_format": settings.input_format,
            "input_shape": settings.input_shape,
            "output": settings.output,
            "catalog": settings.catalog.pattern,
            "catalog_mode": settings.catalog.mode,
            "config_hash": settings.config.config_hash(),
            **{name: getattr(settings.config, name) for name in BUDGET_FLAGS},
            "event_time": settings.event_time.isoformat(),
        },
        sort_keys=True,
    )
