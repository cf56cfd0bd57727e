"""Prompt lines to sharded JSONL files that stay within a batch API's per-file limits.

Beam's text sink rolls to a new shard once a shard holds `max_lines` lines or
at least `roll_bytes` bytes; a shard is closed after the line that reaches the
roll, so a file holds at most `roll_bytes - 1 + line_headroom + 1` =
`max_bytes` bytes: the packer dead-letters longer lines (`FileLimits`).
Rejected: counting bytes ahead of each write in our own DoFn (it would lose
the sink's temp-file-and-rename commit that keeps retried bundles out).
"""

import apache_beam as beam
from apache_beam.io.textio import WriteToText

from schemas.prompt_formats import FileLimits, PromptLine
from transforms.io.row_files import output_prefix


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
