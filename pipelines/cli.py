"""`evpack`: one console command, one subcommand per pipeline or tool.

Each subcommand is a module with `main(argv) -> int`; it is imported only when
chosen, and only once `pipelines.startup` found nothing to answer at once (`--help`,
an unknown flag). Adding one is one line in COMMANDS (and `make templates`).
"""

import difflib
import importlib
import importlib.util
import logging
import os
import sys
from pathlib import Path

from pipelines import startup

COMMANDS: dict[str, tuple[str, str]] = {
    "batch": ("pipelines.batch", "pack request files into prompts and audit tables"),
    "convert": ("pipelines.convert", "other tools' retrieval results into request records"),
    "catalog": ("pipelines.catalog", "load a catalog file into Bigtable (catalog load ...)"),
    "schema": ("pipelines.schema", "write the input JSON Schema (schemas/request.schema.json)"),
    "report": ("pipelines.report", "an HTML report of runs (--audit DIR or --bigquery_dataset)"),
    "stream": ("pipelines.streaming", "pack requests from Pub/Sub; audit rows to BigQuery"),
    "tables": ("pipelines.tables", "create the BigQuery audit dataset and tables"),
    "verify": (
        "pipelines.verification.verify",
        "check a batch API's answers against the run's manifests",
    ),
    "verify-stream": (
        "pipelines.verification.verify_stream",
        "verify answers from Pub/Sub as they arrive",
    ),
    "replay": (
        "pipelines.verification.replay",
        "re-pack a run's requests; report packets that differ",
    ),
}


EXTRAS: dict[str, str] = {"duckdb": "report", "matplotlib": "report"}
"""Modules of an optional extra (pyproject.toml), by module: a command that imports one
the install lacks says, in one line, which extra brings it (a test keeps this in step)."""


def missing_extra(extra: str, module: str) -> str:
    """The one line a command needing a module of a missing extra prints."""
    install = f"pip install 'evidence-packer[{extra}]'"
    return f"needs the {extra} extra ({module} is not installed): {install}"


def usage() -> str:
    lines = ["usage: evpack COMMAND [--help | options]  |  evpack --version", "", "commands:"]
    lines += [f"  {name:<13} {about}" for name, (_, about) in COMMANDS.items()]
    return "\n".join(lines)


def version() -> str:
    """`evpack --version`: the package's version and commit, as manifests stamp them in
    `builder_version`. `packer/version.py` is loaded alone: importing it as
    `packer.version` runs `packer/__init__` (the tokenizer and numpy), and the answer
    must be instant."""
    package = importlib.util.find_spec("packer")
    if package is None or package.origin is None:
        return "evpack unknown"
    spec = importlib.util.spec_from_file_location(
        "_evpack_version", Path(package.origin).with_name("version.py")
    )
    if spec is None or spec.loader is None:
        return "evpack unknown"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.BUILDER_VERSION.replace("evidence-packer-", "evpack ", 1)


def unknown_command(name: str) -> str:
    """One line naming an unknown command and, when one is close, the command meant."""
    close = difflib.get_close_matches(name, list(COMMANDS), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    return f"unknown command {name!r}{hint}"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        return 0
    if args[0] == "--version":
        print(version())
        return 0
    if args[0] not in COMMANDS:
        print(f"evpack: {unknown_command(args[0])}\n\n{usage()}", file=sys.stderr)
        return 2
    early = startup.answer(args)  # --help and unknown flags, before any heavy import
    if early is not None:
        return early
    try:
        module = importlib.import_module(COMMANDS[args[0]][0])
    except ModuleNotFoundError as err:
        extra = EXTRAS.get((err.name or "").split(".")[0])
        if extra is None:
            raise
        print(f"evpack {args[0]}: {missing_extra(extra, err.name or '')}", file=sys.stderr)
        return 2
    return module.main(args[1:])


def console() -> None:
    """The `evpack` console script and `python -m pipelines.cli`: run, then leave at once.

    Output is flushed and the process exits without the interpreter's teardown:
    native threads of the libraries a command loads can still be releasing Python
    objects then, and a finished command that had written everything aborted
    ("terminate called without an active exception", exit -6). A core dump showed
    one cause, an Arrow scan releasing a Python-owned buffer on Arrow's own thread
    (fixed at its source, `transforms.record_files.read_parquet`); skipping the
    teardown keeps any such thread from turning a finished run into a failed one.
    Rejected: plain `sys.exit`, which runs that teardown. Tests call `main`.
    """
    code = main()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    console()
