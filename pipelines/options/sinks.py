"""Where a run's outputs go: files under `--output`, a BigQuery dataset, a Pub/Sub topic."""

import argparse
import os
import tempfile

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions, TestOptions

from pipelines.command import CommandFailed, UsageError
from pipelines.options.flags import (
    GCS_FOLDER,
    PROJECT,
    Flag,
    Param,
    declare,
    parse_bool,
    pubsub_regex,
)
from schemas.tables import BATCH_OUTPUTS, LATER_OUTPUTS
from transforms.io.publish import DEFAULT_SINK_TIMEOUT_SECONDS
from transforms.io.reachability import dataset_problem, pubsub_problems
from transforms.record_files import matching_files
from transforms.run_folder import escaping_links, glob_characters
from transforms.sinks import AUDIT_SINKS, Sinks, audit_sink


class SinkOptions(PipelineOptions):
    """Where outputs go."""

    FLAGS = (
        Flag(
            "output",
            "Directory or gs:// prefix for the outputs not sent elsewhere: prompts "
            "(unless --prompts_topic), audit tables and dead letters (unless "
            "--bigquery_dataset); streaming writes them once per --window_seconds.",
            template=Param("Output prefix", GCS_FOLDER, "GCS_WRITE_FOLDER"),
        ),
        Flag(
            "prompts_topic",
            "Generation topic, projects/<project>/topics/<name>.",
            template=Param("Generation topic", pubsub_regex("topics"), "PUBSUB_TOPIC"),
        ),
        Flag(
            "bigquery_dataset",
            "Audit dataset as <project>.<dataset>; tables manifests, exclusions, "
            "exclusion_counts, dead_letters.",
            template=Param("Audit dataset", rf"^{PROJECT}\.[A-Za-z0-9_]{{1,1024}}$"),
        ),
        Flag(
            "audit_sink",
            "Backend of the audit rows, by name (default: BigQuery when "
            "--bigquery_dataset is named, load jobs on Dataflow, else files under --output).",
            choices=tuple(AUDIT_SINKS),
            template=Param(
                "Audit rows' backend",
                choice_labels={name: name.replace("_", " ") for name in AUDIT_SINKS},
            ),
        ),
        Flag(
            "create_tables",
            "Create the dataset and audit tables if missing at start, and add the columns "
            "this version writes to tables an older one made (true/false).",
            default=True,
            type=parse_bool,
            template=Param("Create audit tables", "^(true|false)$"),
        ),
        Flag(
            "sink_timeout_seconds",
            "How long a sink (Pub/Sub topic, BigQuery dataset, --output) may stay "
            "unreachable: checked at start, then the bound of every call a batch run makes "
            "to it (lock, staging, commit, delivery) and of each publish's retries; past it "
            "the run fails (exit 1) naming the sink and the phase.",
            default=DEFAULT_SINK_TIMEOUT_SECONDS,
            type=int,
            bound="positive",
            template=Param("Sink timeout (seconds)", "^[1-9][0-9]{0,5}$"),
        ),
        Flag(
            "overwrite",
            "Replace the files of an earlier run under --output, and with --bigquery_dataset "
            "the rows of the earlier run of its job and key (default: refuse).",
            switch=True,
            template=Param("Replace an earlier run's outputs", "^(true|false)$", "BOOLEAN"),
        ),
        Flag(
            "prompts_without_evidence",
            "Batch: what to do with a prompt that carries no evidence (every candidate "
            "excluded), which a model can only answer by abstaining: send it with the others, "
            "or hold it in held_prompts/ under --output, never sent to the generation queue; "
            "its manifest and exclusions are written either way.",
            default="send",
            choices=("send", "hold"),
            template=Param(
                "Prompts without evidence", choice_labels={"send": "send", "hold": "hold"}
            ),
        ),
        Flag(
            "audit_job",
            "Batch: the job this run is a run of in --bigquery_dataset; a rerun of the same "
            "job replaces its rows (with --overwrite) or is refused (default: the --output "
            "path).",
            template=Param("Audit job name", r"^\S(.{0,1022}\S)?$"),
        ),
        Flag(
            "run_key",
            "Batch: the part of its job this run fills in --bigquery_dataset, e.g. the date a "
            "scheduler passes when a job writes to the same --output each night; a rerun of "
            "the same job and key replaces its rows (with --overwrite) or is refused, runs of "
            "other keys stay (default: the --output path).",
            template=Param("Run key", r"^\S(.{0,1022}\S)?$"),
        ),
    )

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        declare(parser, cls.FLAGS)


def resource_name(value: str | None, flag: str, kind: str) -> str:
    """A Pub/Sub resource name, projects/<project>/<kind>/<name>; raises naming the flag."""
    if not value or not value.startswith("projects/") or f"/{kind}/" not in value:
        raise ValueError(f"--{flag} is required as projects/<project>/{kind}/<name>, got {value!r}")
    return value


def dataset_name(value: str | None, flag: str = "bigquery_dataset") -> str:
    """A BigQuery dataset, <project>.<dataset>; raises naming the flag."""
    if not value or value.count(".") != 1 or "" in value.split("."):
        raise ValueError(
            f"--{flag} must be <project>.<dataset>, got {value!r}; e.g. --{flag}=my-project.evpack"
        )
    return value


def check_writable(location: str, flag: str = "output") -> None:
    """Refuse before the run an output location that cannot be written: a file where the
    folder goes, a folder below a file, no write permission or a read-only filesystem.

    A probe file is written in the folder, or in its nearest existing ancestor, and
    removed at once: the one test that holds for every cause (`os.access` is not asked:
    as root it answers yes on /proc), and nothing is left behind. A `gs://` location
    is checked when the run takes its lock.
    """
    if "://" in location:
        return
    path = os.path.abspath(location)
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"--{flag} {location!r} is a file; name a folder for the outputs")
    existing = path
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as err:
        raise UsageError(
            f"--{flag} {location!r} cannot be written ({err.strerror or err}); "
            "choose a writable folder"
        ) from err


def within(path: str, place: str) -> bool:
    """Whether `path` is `place` or lies below it: links resolved for local paths (two
    names of one file are one file), as named on gs://."""
    if "://" in path or "://" in place:
        return path == place or path.startswith(place.rstrip("/") + "/")
    real, root = os.path.realpath(path), os.path.realpath(place)
    return os.path.commonpath([real, root]) == root


def check_literal(location: str, flag: str) -> None:
    """Refuse a run folder whose name holds what file matching reads as a pattern
    (`transforms.run_folder.glob_characters`): its files would be found, written and
    replaced as another folder's. And a leading `~` the shell did not expand (quoted, or
    from a script): it would make a folder named `~` here, one `rm -rf ~` away from
    home. Spaces, `%`, braces and any other letter are taken as written."""
    marks = glob_characters(location)
    if marks:
        raise UsageError(
            f"--{flag} {location!r} holds {' '.join(marks)}, which file matching reads as a "
            "pattern (exp[1] would match exp1); name a folder without * ? ["
        )
    if location.startswith("~"):
        raise UsageError(
            f"--{flag} {location!r} starts with ~, which no shell expanded; write the "
            "folder out (e.g. $HOME/...)"
        )


def check_inputs_outside(patterns: list[str | None], folders: list[str], fix: str) -> None:
    """Refuse an input file lying in one of the `folders` a run writes or replaces: it
    would be deleted (`--overwrite` sets the earlier files aside, then deletes them)
    or read back as this run's own output."""
    for pattern in filter(None, patterns):
        for path in matching_files(pattern):
            clash = next((folder for folder in folders if within(path, folder)), None)
            if clash is not None:
                raise UsageError(
                    f"{path} is an input of this run and lies in {clash}/, which it writes; {fix}"
                )


def run_folders(output: str) -> list[str]:
    """The folders of `output` a batch run replaces: its outputs and what later commands
    wrote there for the earlier run."""
    return [f"{output}/{name}" for name in (*BATCH_OUTPUTS, *LATER_OUTPUTS)]


def check_output(location: str, flag: str = "output") -> None:
    """Refuse before the run an output folder a run could not use as named: a pattern
    (`check_literal`), one that cannot be written (`check_writable`), or one where an
    output folder is a link leading out of it (`transforms.run_folder.escaping_links`)."""
    check_literal(location, flag)
    check_writable(location, flag)
    links = escaping_links(location.rstrip("/"), [*BATCH_OUTPUTS, *LATER_OUTPUTS])
    if links:
        raise UsageError(
            f"--{flag} {location!r}: {links[0]} is a link leading out of it (to "
            f"{os.path.realpath(links[0])}); outputs are never written or deleted through "
            "a link: make it a folder, or choose another --" + flag
        )


def _named(value: str | None, flag: str, example: str, output: str) -> str:
    """`value` as given, else `output` (absolute when local); a blank or padded value is
    refused naming `flag`."""
    if value is None:
        return output if "://" in output else os.path.abspath(output)
    if not value.strip() or value != value.strip():
        raise UsageError(
            f"--{flag} {value!r} is empty or starts or ends with a space; "
            f"name it, e.g. --{flag}={example}, or leave the flag out"
        )
    return value


def job_name(options: PipelineOptions, output: str) -> str:
    """`--audit_job`, else `output`: which job a batch run is a run of
    (`transforms.io.table_commit`)."""
    return _named(options.view_as(SinkOptions).audit_job, "audit_job", "nightly", output)


def run_key(options: PipelineOptions, output: str) -> str:
    """`--run_key`, else `output`: which part of its job a batch run fills. A run's identity
    is its job and its key, so a nightly job into a folder per night keeps every night."""
    return _named(options.view_as(SinkOptions).run_key, "run_key", "2026-12-01", output)


def resolve_sinks(options: PipelineOptions, *, window_seconds: int | None = None) -> Sinks:
    """Where this run's outputs go (`transforms.sinks`); `window_seconds` in streaming."""
    opts = options.view_as(SinkOptions)
    dataset, topic = opts.bigquery_dataset, opts.prompts_topic
    if dataset is not None:
        dataset_name(dataset)
    if topic is not None:
        resource_name(topic, "prompts_topic", "topics")
    output = opts.output.rstrip("/") if opts.output else None
    if output is not None:
        check_output(output)
    if output is None and (dataset is None or topic is None):
        missing = "audit rows" if dataset is None else "prompts"
        raise ValueError(
            f"--output is required for the {missing} (or name --bigquery_dataset and "
            "--prompts_topic), e.g. --output=out/run1"
        )
    # batch only: a streaming job's prompts only go to its topic
    hold = window_seconds is None and opts.prompts_without_evidence == "hold"
    if hold and output is None:
        raise ValueError(
            "--prompts_without_evidence hold writes held_prompts/ under --output: name "
            "--output, e.g. --output=out/run1"
        )
    runner = options.view_as(StandardOptions).runner or ""
    loads = window_seconds is None and dataset is not None and runner.startswith("Dataflow")
    sinks = Sinks(
        output, dataset, topic, loads, window_seconds, opts.audit_sink, hold_without_evidence=hold
    )
    AUDIT_SINKS[audit_sink(sinks)](sinks)  # a location the chosen backend needs is named
    return sinks


def require_reachable(
    options: PipelineOptions,
    sinks: Sinks,
    timeout_seconds: float,
    create_tables: bool,
    *,
    topics: dict[str, str | None] | None = None,
    subscriptions: dict[str, str | None] | None = None,
) -> None:
    """Fail the run (exit 1) naming each named sink that is missing or cannot be reached
    within `timeout_seconds` (`transforms.io.reachability`): the prompts topic, the
    BigQuery dataset, and the job's other `topics` and `subscriptions` (flag -> name).
    Not for a Dataflow dry run (`--dry_run`): it builds the job request and runs nothing."""
    if options.view_as(TestOptions).dry_run:
        return
    named_topics = {"prompts_topic": sinks.prompts_topic, **(topics or {})}
    problems = pubsub_problems(named_topics, subscriptions or {}, timeout_seconds)
    found = dataset_problem(sinks.dataset, timeout_seconds, create_tables)
    problems += [found] if found else []
    if problems:
        raise CommandFailed("; ".join(problems))
