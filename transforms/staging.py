"""A batch run writes under a staging directory; a run that finished moves its files into place.

Beam's file sinks write each shard to a temp file and rename it, but a job
that fails half way still leaves the shards of the outputs it finished, beside
`beam-temp-*` leftovers of the others: readers of `<output>/<name>/*` would see
half a run. So the run writes everything under `<output>/.tmp-<run>/`, and
after the pipeline succeeded the files are moved to `<output>/<name>/` (and
the files of the earlier run they replace, with `--overwrite`, deleted only
then). A failed run leaves the outputs of the earlier run as they were and
its own partial files under the staging directory, which the error names.
Rejected: writing in place and deleting on failure (a killed process cannot
clean up, and deleting would also take the evidence of what went wrong).
"""

import time
import uuid
from collections.abc import Mapping

from apache_beam.io.filesystems import FileSystems


def staging_name() -> str:
    """A fresh staging directory name: hidden, so output globs never match it."""
    return f".tmp-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}"


def files_under(directory: str) -> list[str]:
    """Every file below `directory` (none if it does not exist)."""
    return sorted(m.path for r in FileSystems.match([f"{directory}/**"]) for m in r.metadata_list)


def commit(staging: str, output: str, outputs: Mapping[str, str], replaced: list[str]) -> int:
    """Move the shards of each output (name -> extension) from `staging` to `output`.

    Deletes `replaced` (an earlier run's files) first, then `staging` once
    empty of shards. Returns how many files were moved.
    """
    sources = []
    for name, ext in outputs.items():
        pattern = f"{staging}/{name}/{name}-*.{ext}"
        sources += sorted(m.path for r in FileSystems.match([pattern]) for m in r.metadata_list)
    if replaced:
        FileSystems.delete(replaced)
    destinations = [output + s.removeprefix(staging) for s in sources]
    for directory in sorted({FileSystems.split(d)[0] for d in destinations}):
        if not FileSystems.exists(directory):
            FileSystems.mkdirs(directory)
    if sources:
        FileSystems.rename(sources, destinations)
    FileSystems.delete([staging])
    return len(sources)
