"""Row files: pydantic rows as sharded JSONL (prompts, dead letters) or Parquet (audit rows).

Parquet schemas come from `schemas.arrow`, derived from the same pydantic
models as the BigQuery tables. Each output is a directory of sharded files
`<output>/<name>/<name>-SSSSS-of-NNNNN.<ext>`, so a reader globs
`<output>/<name>/*.parquet`. An unbounded (streaming) input is written once per
`window_seconds` window, as `<name>-[<window start>, <window end>)-SSSSS-of-NNNNN.<ext>`.
"""

from collections.abc import Iterator

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.parquetio import WriteToParquet, WriteToParquetBatched
from apache_beam.io.textio import WriteToText
from apache_beam.transforms.window import GlobalWindows
from apache_beam.utils.windowed_value import WindowedValue
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


BEAM_BATCH_ROWS = 1000
"""The rows of each record batch `WriteToParquet` makes of a bundle's rows."""


class _BundleTable(beam.DoFn):
    """Arrow record batches -> one table per bundle, in the global window (bounded input
    only), cut into batches of `BEAM_BATCH_ROWS` rows: the table `WriteToParquet` makes
    of the same rows, so the files are byte for byte the same."""

    def __init__(self, schema: pa.Schema) -> None:
        self._schema = schema
        self._batches: list[pa.RecordBatch] = []

    def start_bundle(self) -> None:
        self._batches = []

    def process(self, batch: pa.RecordBatch) -> None:
        self._batches.append(batch)

    def finish_bundle(self) -> Iterator[WindowedValue]:
        if self._batches:
            rows = pa.Table.from_batches(self._batches, self._schema).combine_chunks()
            table = pa.Table.from_batches(rows.to_batches(BEAM_BATCH_ROWS), self._schema)
            self._batches = []
            yield GlobalWindows.windowed_value_at_end_of_window(table)


class WriteArrowBatches(beam.PTransform[beam.PCollection[pa.RecordBatch], beam.pvalue.PDone]):
    """A batch job's audit rows, already Arrow record batches (the sink check's own
    encoding, `transforms.sink_rows`), as Parquet files named as `WriteParquet` names
    them: rows are converted to Arrow once."""

    def __init__(self, output: str, name: str, model: type[BaseModel]) -> None:
        super().__init__()
        self._prefix = output_prefix(output, name)
        self._schema = arrow_schema(model)

    def expand(self, batches: beam.PCollection[pa.RecordBatch]) -> beam.pvalue.PDone:
        return (
            batches
            | "ToTable" >> beam.ParDo(_BundleTable(self._schema))
            | "Write"
            >> WriteToParquetBatched(self._prefix, self._schema, file_name_suffix=".parquet")
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
