"""The one job both pipelines run between reading records and their own last steps:
parse, pack, and write every output, each stage's dead letters registered where the stage
is applied.

The batch and streaming jobs differ in what they hand in (the reader's records, their
parse transform, the pack step with its catalog provider, the output plan), not in how
the steps meet, so that is written once here. Rejected: one `PTransform` around the
steps, which would rename every step (`PackJob/Parse`, ...): a running streaming job on
Dataflow is updated in place only when its step names stay, and the job graph and the
metrics name each step at the top level.
"""

from dataclasses import dataclass

import apache_beam as beam

from transforms.job_outputs import DeadLetters, OutputPlan, WrittenOutputs, write_outputs
from transforms.pack import PackOutputs, PackRequests


@dataclass(frozen=True)
class JobSteps:
    """What a job hands in: its parse transform (records -> requests and dead letters), its
    pack step and where its outputs go."""

    parse: beam.PTransform
    pack: PackRequests
    plan: OutputPlan


@dataclass(frozen=True)
class PackedJob:
    """What the steps leave for the job's own last steps (progress, summaries, commit)."""

    packed: PackOutputs
    outputs: WrittenOutputs
    letters: DeadLetters


def parse_pack_write(records: beam.PCollection, steps: JobSteps, letters: DeadLetters) -> PackedJob:
    """Parse `records`, pack the requests and write every output; `letters` holds what the
    job's reader refused already, and gets each stage's own."""
    parsed = letters.take("Parse", records | "Parse" >> steps.parse)
    packed = letters.take("Pack", parsed.requests | "Pack" >> steps.pack)
    return PackedJob(packed, write_outputs(packed, letters, steps.plan), letters)
