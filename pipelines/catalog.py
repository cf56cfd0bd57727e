"""`evpack catalog load`: write a catalog file into the Bigtable catalog table.

    evpack catalog load --catalog catalog.jsonl --bigtable_project P \\
        --bigtable_instance I --bigtable_table T [--catalog_format jsonl|parquet]

Creates the table if missing, writes every document of the file, and marks as
deleted every document of the table the file no longer lists
(`transforms.catalog.bigtable_table.load_catalog`). Idempotent: run it after each
catalog export; running jobs see the changes within their cache TTL
(`--catalog_refresh_seconds`). The file is streamed; the loader keeps one row
key per document in memory to find the vanished ones. A file that lists a
document twice stops the load with the reason (rows written before stay whole
and correct; rerun after fixing the export). A file of no document is refused
before anything is written, unless `--allow_empty` says the catalog is meant
to be empty (it marks every document deleted). Set `BIGTABLE_EMULATOR_HOST` to
load the local emulator.
"""

import argparse
import sys
from typing import get_args

from packer.parsing.names import FileFormat
from pipelines.command import CommandParser, run_parsed
from pipelines.options.input import file_format
from transforms.catalog.bigtable_table import TableAddress, create_table, load_catalog
from transforms.catalog.side_input import catalog_documents


def main(argv: list[str] | None = None) -> int:
    parser = CommandParser("evpack catalog", __doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    load = commands.add_parser("load", help="write a catalog file into the Bigtable table")
    load.add_argument("--catalog", required=True, help="JSONL or Parquet file or glob.")
    load.add_argument(
        "--catalog_format",
        default="auto",
        choices=["auto", *get_args(FileFormat)],
        help="Format of --catalog; auto reads it from the file extension.",
    )
    load.add_argument("--bigtable_project", required=True, help="Project of the Bigtable table.")
    load.add_argument("--bigtable_instance", required=True, help="Bigtable instance.")
    load.add_argument(
        "--bigtable_table",
        required=True,
        help="Table to write (created when missing); --bigtable_table of the jobs reading it.",
    )
    load.add_argument(
        "--allow_empty",
        action="store_true",
        help="Load a catalog of no document (marks every document of the table deleted); "
        "refused without it.",
    )
    return run_parsed(parser, _load, argv)


def _load(args: argparse.Namespace) -> int:
    fmt = file_format(args.catalog, args.catalog_format, "catalog")
    address = TableAddress(args.bigtable_project, args.bigtable_instance, args.bigtable_table)
    documents = catalog_documents(args.catalog, fmt)
    result = load_catalog(create_table(address), documents, allow_empty=args.allow_empty)
    print(
        f"{address.table}: {result.written} documents written, "
        f"{result.marked_deleted} no longer in the file marked deleted"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
