"""Prompt lines to sharded JSONL files that stay within a batch API's per-file limits.

Beam's text sink rolls to a new shard once a shard holds `max_lines` lines or
at least `roll_bytes` bytes; a shard is closed after the line that reaches the
roll, so a file holds at most `roll_bytes - 1 + line_headroom + 1` =
`max_bytes` bytes: a longer line is refused where it is made (`prompt_line`).
Rejected: counting bytes ahead of each write in our own DoFn (it would lose
the sink's temp-file-and-rename commit that keeps retried bundles out).

The line is made here, by the writer that knows its limits, and called by the
pack step (`transforms.pack`): a line over its headroom dead-letters its request
before any of that request's rows is written. Rejected: making the line in a
step of the writer after packing (the request would be counted packed, its
prompt in the run's figures, and then refused: every count of the run would
need its format refusals taken out again).
"""

import apache_beam as beam
from apache_beam.io.textio import WriteToText

from packer.parsing.dead_letters import dead_letter
from schemas import DeadLetter, ManifestRow, PromptMessage
from schemas.prompt_formats import FileLimits, PromptFormat, PromptLine
from transforms.io.row_files import output_prefix


def prompt_line(
    fmt: PromptFormat, prompt: PromptMessage, manifest: ManifestRow, reasoning_headroom: int = 0
) -> PromptLine | DeadLetter:
    """The prompt as one line of `fmt` (the manifest's reserved answer, plus the config's
    `reasoning_headroom`, as the provider's output limit), or a `format` dead letter when
    the line is longer than the headroom a sharded file leaves it."""
    text = fmt.line(prompt, manifest.budget.reserved_answer + reasoning_headroom)
    headroom = fmt.limits.line_headroom
    size = len(text.encode("utf-8"))
    if headroom and size > headroom:
        return dead_letter(
            "format",
            f"{fmt.name} line of {size} bytes exceeds the "
            f"{headroom}-byte line headroom of a sharded file",
            prompt.model_dump_json(),
            "",
            prompt.request_id,
        )
    return PromptLine(
        prompt.request_id,
        prompt.tenant_id,
        prompt.builder_version,
        text,
        tuple(tuple(c.labels) for c in manifest.conflicts if len(c.labels) >= 2),
        tuple(manifest.uncovered_facets),
        manifest.prompt_sha256,
    )


class WritePromptLines(beam.PTransform[beam.PCollection[PromptLine], beam.pvalue.PDone]):
    """Formatted prompt lines as `<output>/<name>/<name>-SSSSS-of-NNNNN.jsonl`."""

    def __init__(self, output: str, name: str, limits: FileLimits) -> None:
        super().__init__()
        self._prefix = output_prefix(output, name)
        self._limits = limits

    def expand(self, lines: beam.PCollection[PromptLine]) -> beam.pvalue.PDone:
        return (
            lines
            | "Line" >> beam.Map(lambda prompt: prompt.line)
            | "Write"
            >> WriteToText(
                self._prefix,
                file_name_suffix=".jsonl",
                max_records_per_shard=self._limits.max_lines,
                max_bytes_per_shard=self._limits.roll_bytes,
            )
        )
