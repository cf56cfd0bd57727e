"""Row files: pydantic rows as sharded JSONL (prompts, dead letters) or Parquet (audit rows).

Parquet schemas come from `schemas.arrow`, derived from the same pydantic
models as the BigQuery tables. Each output is a directory of sharded files
`<output>/<name>/<name>-SSSSS-of-NNNNN.<ext>`, so a reader globs
`<output>/<name>/*.parquet`. An unbounded (streaming) input is written once per
`window_seconds` window, as `<name>-[<window start>, <window end>)-SSSSS-of-NNNNN.<ext>`.
"""

import apache_beam as beam
from apache_beam.io.parquetio import WriteToParquet
from apache_beam.io.textio import WriteToText
from pydantic import BaseModel

from schemas.arrow import arrow_schema
from schemas.tables import OUTPUTS
from transforms.io.base import RowId, Written


def output_prefix(output: str, name: str) -> str:
    """The file prefix of one named output under the run's output directory."""
    return f"{output}/{name}/{name}"


class WriteJsonl(beam.PTransform[beam.PCollection[BaseModel], beam.pvalue.PDone]):
    """Models as JSON lines (the generation queue's message shape for prompts)."""

    def __init__(self, output: str, name: str, window_seconds: int | None = None) -> None:
        super().__init__()
        self._prefix = output_prefix(output, name)
        self._window = window_seconds

    def expand(self, rows: beam.PCollection[BaseModel]) -> beam.pvalue.PDone:
        return (
            rows
            | "ToJson" >> beam.Map(lambda row: row.model_dump_json())
            | "Write"
            >> WriteToText(
                self._prefix, file_name_suffix=".jsonl", triggering_frequency=self._window
            )
        )


class WriteParquet(beam.PTransform[beam.PCollection[BaseModel], beam.pvalue.PDone]):
    """Models as Parquet rows with the Arrow schema derived from their model."""

    def __init__(
        self,
        output: str,
        name: str,
        model: type[BaseModel],
        window_seconds: int | None = None,
    ) -> None:
        super().__init__()
        self._prefix = output_prefix(output, name)
        self._schema = arrow_schema(model)
        self._window = window_seconds

    def expand(self, rows: beam.PCollection[BaseModel]) -> beam.pvalue.PDone:
        return (
            rows
            | "ToDict" >> beam.Map(lambda row: row.model_dump(mode="python"))
            | "Write"
            >> WriteToParquet(
                self._prefix,
                self._schema,
                file_name_suffix=".parquet",
                triggering_frequency=self._window,
            )
        )


class WriteFiles(beam.PTransform):
    """Rows of one named output as files under `output` (its file type from the table)."""

    def __init__(self, output: str, name: str, window_seconds: int | None = None) -> None:
        super().__init__()
        self._output = output
        self._name = name
        self._window = window_seconds

    def expand(self, rows: beam.PCollection) -> beam.pvalue.PDone:
        table = OUTPUTS[self._name]
        if table.file_type == "parquet":
            return rows | WriteParquet(self._output, self._name, table.model, self._window)
        return rows | WriteJsonl(self._output, self._name, self._window)


class FileRows:
    """Audit rows as files under `--output` (Parquet, JSONL for dead letters)."""

    def __init__(self, output: str, window_seconds: int | None) -> None:
        self._output = output
        self._window = window_seconds

    def write(self, rows: beam.PCollection, name: str, row_id: RowId | None) -> Written:
        return Written(files=rows | "Files" >> WriteFiles(self._output, name, self._window))
