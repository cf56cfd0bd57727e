"""The batch pipeline: request files in; prompts, audit tables and dead letters out.

    evpack batch --input 'in/*.jsonl' --catalog catalog.jsonl --config config.yaml \\
        --output out/run1 [--direct_num_workers 2 --direct_running_mode multi_processing]

Runner: unless `--runner` names another one (e.g. DataflowRunner), the job runs
on Beam's in-process FnApiRunner, the engine the DirectRunner itself uses for
batch. The plain DirectRunner first tries the Prism runner, whose binary is
downloaded at run time; offline that fails. `--direct_num_workers` and
`--direct_running_mode` are honoured by the FnApiRunner.
"""

import logging
import sys
import time
from dataclasses import dataclass

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.runner import PipelineResult

from packer.formats import FILE_LIMITS
from pipelines.options import (
    EvpackOptions,
    Settings,
    pin_local_runner,
    resolve,
    settings_summary,
    usage,
)
from pipelines.summary import RunSummary, summarize
from schemas import ExclusionCount, ExclusionRecord, ManifestRow
from transforms.catalog_io import ReadCatalog
from transforms.catalog_join import PackJoined
from transforms.catalog_lookup import PackWithBigtable
from transforms.counts import CountExclusions
from transforms.files import WriteJsonl, WriteParquet, output_prefix
from transforms.pack import PackRequests
from transforms.parse import ParseRequests, ReadRecords
from transforms.prompt_files import WritePromptLines
from transforms.stats import CountDeadLetters, PromptTokenPercentiles

LOCAL_RUNNER = "FnApiRunner"

_LOG = logging.getLogger(__name__)


OUTPUTS = {
    "prompts": "jsonl",
    "manifests": "parquet",
    "exclusions": "parquet",
    "exclusion_counts": "parquet",
    "dead_letters": "jsonl",
}
"""The outputs of a run (directories under --output) and their file type."""


def output_files(output: str) -> dict[str, str]:
    """Where each output of a run lands (globs)."""
    return {name: f"{output_prefix(output, name)}-*.{ext}" for name, ext in OUTPUTS.items()}


def pack_transform(p: beam.Pipeline, settings: Settings) -> beam.PTransform:
    """The pack step of the chosen catalog mode (see `--catalog_mode`)."""
    source, config, event_time = settings.catalog, settings.config, settings.event_time
    if source.mode == "join":
        return PackJoined(config, source.pattern, source.file_format, event_time)
    if source.mode == "bigtable":
        return PackWithBigtable(config, source.bigtable, event_time)
    catalog = p | "ReadCatalog" >> ReadCatalog(source.pattern, source.file_format)
    return PackRequests(config, catalog, event_time)


def build(p: beam.Pipeline, settings: Settings) -> None:
    """Compose the batch job; every stage is a transform from `transforms/`."""
    if settings.input is None or settings.input_format is None:
        raise ValueError("the batch job reads files: pass --input")
    parsed = (
        p
        | "ReadRequests" >> ReadRecords(settings.input, settings.input_format)
        | "Parse" >> ParseRequests(settings.input_shape, settings.max_record_bytes)
    )
    packed = parsed.requests | "Pack" >> pack_transform(p, settings)
    dead_letters = (
        (parsed.dead_letters, packed.dead_letters)
        | "AllDeadLetters" >> beam.Flatten()
        | "CountDeadLetters" >> CountDeadLetters()
    )
    _ = packed.prompts | "TokenPercentiles" >> PromptTokenPercentiles()
    out = settings.output
    limits = FILE_LIMITS[settings.config.prompt_format]
    _ = packed.lines | "WritePrompts" >> WritePromptLines(out, "prompts", limits)
    _ = packed.manifests | "WriteManifests" >> WriteParquet(out, "manifests", ManifestRow)
    _ = packed.exclusions | "WriteExclusions" >> WriteParquet(out, "exclusions", ExclusionRecord)
    _ = (
        packed.exclusions
        | "CountExclusions" >> CountExclusions()
        | "WriteCounts" >> WriteParquet(out, "exclusion_counts", ExclusionCount)
    )
    _ = dead_letters | "WriteDeadLetters" >> WriteJsonl(out, "dead_letters")


def clear_earlier_run(output: str, overwrite: bool) -> None:
    """Refuse, or with `overwrite` delete, output files an earlier run left under `output`.

    Shards of two runs would otherwise mix under the same globs.
    """
    results = FileSystems.match(list(output_files(output).values()))
    stale = sorted(m.path for result in results for m in result.metadata_list)
    if not stale:
        return
    if not overwrite:
        raise ValueError(
            f"--output {output!r} already holds {len(stale)} files of an earlier run "
            f"(e.g. {stale[0]}); pass --overwrite to replace them, or choose another --output"
        )
    FileSystems.delete(stale)


@dataclass(frozen=True)
class BatchRun:
    """A finished run: its settings and summary."""

    settings: Settings
    summary: RunSummary


def start(
    argv: list[str] | None = None, *, clear_outputs: bool = True
) -> tuple[PipelineResult, Settings]:
    """Parse flags, clear an earlier run's outputs (if allowed) and start the job.

    The Dataflow launcher passes `clear_outputs=False`: it must return at once
    and may not reach the output bucket, so each job writes to a fresh prefix.
    """
    options = PipelineOptions(argv)
    settings = resolve(options)
    if clear_outputs:
        clear_earlier_run(settings.output, options.view_as(EvpackOptions).overwrite)
    pin_local_runner(options, LOCAL_RUNNER)
    _LOG.info("evpack batch settings: %s", settings_summary(settings))
    pipeline = beam.Pipeline(options=options)
    build(pipeline, settings)
    return pipeline.run(), settings


def run(argv: list[str] | None = None) -> BatchRun:
    """Run the batch job to completion and summarize it."""
    started = time.monotonic()
    result, settings = start(argv)
    result.wait_until_finish()
    elapsed = time.monotonic() - started
    summary = summarize(result.metrics(), elapsed, output_files(settings.output))
    return BatchRun(settings=settings, summary=summary)


def main(argv: list[str] | None = None) -> int:
    """Console entry: run, print the summary; bad flags exit 2 with the reason."""
    if argv and {"-h", "--help"} & set(argv):
        print(usage("evpack batch", "Pack request files into prompts and audit tables."))
        return 0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("apache_beam").setLevel(logging.WARNING)
    try:
        finished = run(argv)
    except ValueError as err:
        print(f"evpack batch: {err}", file=sys.stderr)
        return 2
    print(finished.summary.render())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
