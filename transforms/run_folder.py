"""A run's folder: what it holds, what may be written in it, and whether it is one whole run.

The batch commit (`transforms.staging`) moves a run's files into `<output>/`,
the run record `.run.json` last, each file and its size; later commands add
what belongs to that run (`schemas.tables.LATER_OUTPUTS`). Readers (`evpack
replay`, `evpack report`) read a folder as its record lists it, and refuse one
whose listed files are gone or whose commit was cut off half way. Before a run,
the folder's name and its output folders are checked: file matching reads `*?[`
as a pattern, and a folder linked out of `--output` would take writes and
deletes elsewhere.

Rejected: listing each output's files by glob alone (a copy missing a whole
output, or half of a killed commit, would read as a run); a marker file per
commit beside the run record (the record written into staging before the first
move already marks a commit under way).
"""

import json
import os
from collections.abc import Mapping
from typing import Any

from apache_beam.io.filesystems import FileSystems

from schemas.tables import LATER_OUTPUTS

STAGING_PREFIX = ".tmp-"


def matched(patterns: list[str]) -> list[str]:
    return sorted(m.path for r in FileSystems.match(patterns) for m in r.metadata_list)


def prompt_line_globs(output: str) -> list[str]:
    """The globs of a run's prompt lines that match files: `prompts/`, and `held_prompts/`
    of a run that held its prompts without evidence (`--prompts_without_evidence hold`),
    which readers of the run's prompts (`evpack verify`, `evpack replay`) read alike."""
    globs = (f"{output}/prompts/*.jsonl", f"{output}/held_prompts/*.jsonl")
    return [pattern for pattern in globs if matched([pattern])]


def staged_prompt_glob(output: str) -> str | None:
    """The glob of the prompts a run with `--prompts_topic` staged for its topic (`outbox/`,
    each line a `schemas.QueuedPrompt` around its prompt line), if it matches files."""
    pattern = f"{output}/outbox/*.jsonl"
    return pattern if matched([pattern]) else None


def files_under(directory: str) -> list[str]:
    """Every file below `directory` (none if it does not exist)."""
    return matched([f"{directory}/**"])


def committed(output: str, outputs: Mapping[str, str]) -> list[str]:
    """The committed files under `output` of each output (name -> extension)."""
    return matched([f"{output}/{name}/{name}-*.{ext}" for name, ext in outputs.items()])


def run_files(output: str, outputs: Mapping[str, str]) -> list[str]:
    """Every file of the run committed under `output`: its outputs, and what later commands
    wrote there for it (`schemas.tables.LATER_OUTPUTS`: verifications, replay rows).
    An overwrite replaces them all, so nothing of the earlier run passes as the new one's."""
    later = matched([f"{output}/{name}/**" for name in LATER_OUTPUTS])
    return sorted({*committed(output, outputs), *later})


GLOB_CHARACTERS = frozenset("*?[")
"""What Beam's filesystems read as a pattern in a path (local and gs:// alike)."""


def glob_characters(location: str) -> str:
    """The characters of `location` a match would read as a pattern ('' if none).

    Every reader and the commit find a run's files by matching `<output>/<name>/...`;
    a folder named `exp[1]` would match `exp1`, and Beam's own sinks match their
    temporary files the same way, so such an output cannot work. Rejected: escaping
    (`[[]`) at every match, which Beam's sinks do not do.
    """
    return "".join(sorted(GLOB_CHARACTERS & set(location)))


def escaping_links(output: str, names: list[str]) -> list[str]:
    """The folders under `output/<name>` (for each of `names`, the outputs a run moves,
    replaces or deletes) that are symbolic links leading out of `output`, or nowhere.

    A commit moves files into such a folder and `--overwrite` deletes the earlier
    files there: through a link, that would write and delete outside `--output`.
    A link leading nowhere is named too (a folder would be made through it). Local
    folders only (an object store has no links). Links to files are harmless: a move
    replaces the link itself, never what it points to.
    """
    if "://" in output or not os.path.isdir(output):
        return []
    root = os.path.realpath(output)
    links = []
    for name in names:
        top = os.path.join(output, name)
        if os.path.islink(top):
            links.append(top)
        elif os.path.isdir(top):  # links below: os.walk lists them, never enters them
            links += [
                os.path.join(folder, entry)
                for folder, subfolders, files in os.walk(top)
                for entry in (*subfolders, *files)
                if os.path.islink(os.path.join(folder, entry))
            ]
    found = []
    for link in links:
        target = os.path.realpath(link)
        if os.path.isfile(target):
            continue
        if os.path.commonpath([root, target]) != root or not os.path.isdir(target):
            found.append(link)
    return sorted(found)


ASIDE = ".replaced"
"""Where, under the staging directory, a commit sets the files it replaces aside."""
RECORD = ".run.json"
"""The run record, committed last with the outputs: each file the run committed and its size."""


def sizes(root: str, paths: list[str]) -> dict[str, int]:
    found = FileSystems.match(paths) if paths else []
    return {
        m.path.removeprefix(f"{root}/"): m.size_in_bytes for r in found for m in r.metadata_list
    }


def read_record(output: str) -> dict[str, Any] | None:
    path = f"{output}/{RECORD}"
    if not FileSystems.exists(path):
        return None
    with FileSystems.open(path) as handle:
        record: dict[str, Any] = json.loads(handle.read().decode("utf-8"))
    return record


def recorded_run_id(output: str) -> str | None:
    """The id of the run whose record is in `output/runs/` (the newest, if several); None
    for a folder without one (a streaming run, or a version before run ids)."""
    ids = []
    for path in matched([f"{output}/runs/*.jsonl"]):
        with FileSystems.open(path) as handle:
            for line in handle.read().decode("utf-8").split("\n"):
                if line.strip():
                    ids.append(json.loads(line).get("run_id") or "")
    return max(ids, default="") or None


def cut_off(staging: str) -> bool:
    """Whether the commit of `staging` moved some files and not all: a process killed
    during it (or a commit under way). Its plan writes the run record into staging
    before the first move, and the record moves in last; a commit that fails is moved
    back and drops that record. So a record still in staging whose files are not all
    there, or files set aside, mark a commit cut off half way."""
    if files_under(f"{staging}/{ASIDE}"):
        return True
    record = read_record(staging)
    return record is not None and any(
        not FileSystems.exists(f"{staging}/{name}") for name in record["files"]
    )


def cut_off_commits(output: str) -> list[str]:
    """The staging folders under `output` whose commit was cut off half way (`cut_off`)."""
    found = matched([f"{output}/{STAGING_PREFIX}*/**"])
    stagings = {f"{output}/{p.removeprefix(f'{output}/').split('/', 1)[0]}" for p in found}
    return sorted(s for s in stagings if cut_off(s))


def not_whole(output: str, outputs: Mapping[str, str]) -> str | None:
    """Why `output` does not hold one whole committed run for a reader, or None (also
    when it has no run record and no commit was cut off there: a streaming run's
    folder, or one written before records existed; readers that need a record ask
    `recorded_files`). A file the record lists is missing, or no record is there
    while a commit was cut off (its first run's outputs half moved in)."""
    cut = cut_off_commits(output)
    where = f" (the commit of {cut[0]}/ was cut off half way)" if cut else ""
    listed = recorded_files(output)
    if listed is None:
        return f"{output} has no run record{where}" if cut else None
    missing = [f for f in listed if not FileSystems.exists(f)]
    if missing:
        return (
            f"{missing[0]} is missing: {len(missing)} of the {len(listed)} files its run "
            f"record {output}/{RECORD} lists are not there{where}"
        )
    return None


def recorded_files(output: str) -> list[str] | None:
    """The files the run record of `output` lists, or None without a record."""
    record = read_record(output)
    return None if record is None else [f"{output}/{name}" for name in sorted(record["files"])]


def record_mismatches(output: str, outputs: Mapping[str, str]) -> list[str]:
    """How the committed files under `output` differ from its run record: each file missing,
    changed in size, or not the run's (none without a record, as before records existed).

    Readers of a run folder (`evpack replay`) name these: a whole output deleted
    after the run would otherwise look like one sent elsewhere.
    """
    record = read_record(output)
    if record is None:
        return []
    recorded: dict[str, int] = record["files"]
    present = sizes(output, committed(output, outputs))
    problems = [f"{name} is missing" for name in sorted(recorded.keys() - present.keys())]
    problems += [
        f"{name} is {present[name]} bytes, the run wrote {recorded[name]}"
        for name in sorted(recorded.keys() & present.keys())
        if present[name] != recorded[name]
    ]
    problems += [
        f"{name} is not a file of the run" for name in sorted(present.keys() - recorded.keys())
    ]
    return problems
