"""The earlier batch run that `evpack verify` and `evpack replay` read."""

import argparse

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.options.flags import Flag, declare


class StoredRunOptions(PipelineOptions):
    """The earlier run to read."""

    FLAGS = (
        Flag(
            "run",
            "The --output of an earlier batch run, read by evpack verify and evpack replay.",
        ),
    )

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        declare(parser, cls.FLAGS)
