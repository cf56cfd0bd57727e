"""The earlier batch run that `evpack verify` and `evpack replay` read."""

import argparse

from apache_beam.io.filesystem import BeamIOError
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.command import UsageError
from pipelines.options.flags import Flag, declare
from schemas.tables import BATCH_FILE_TYPES
from transforms.run_folder import not_whole


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


def check_whole_run(folder: str, flag: str) -> None:
    """Refuse a run folder that does not hold one whole run (`transforms.run_folder.
    not_whole`: a file its run record lists is gone, or its first commit was cut off
    half way), in one line naming what is missing or the staging folder."""
    try:
        problem = not_whole(folder, BATCH_FILE_TYPES)
    except BeamIOError as err:  # e.g. a bucket that does not exist
        raise UsageError(f"--{flag} {folder} cannot be listed: {err}") from err
    if problem is not None:
        raise UsageError(
            f"--{flag} {folder} is not a whole run: {problem}; use it once its run is "
            "committed, or rerun it"
        )
