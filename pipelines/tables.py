"""`evpack tables`: create the BigQuery audit dataset and tables from the schemas.

The dashboard views of `pipelines/dashboard_views/` are created (or updated) with them.

    evpack tables --dataset PROJECT.DATASET [--table manifests --table exclusions ...]

Idempotent. A table an older version created gets the columns this version
writes (added in place; a column of another type is an error naming it). The
batch and streaming jobs do the same at start (`--create_tables`);
deployments that run jobs without table-creation rights run this once
instead. Set `BIGQUERY_EMULATOR_HOST` to create them in the local emulator.
"""

import argparse
import sys

from pipelines.command import CommandParser, run_parsed
from pipelines.options.sinks import dataset_name
from pipelines.views import create_views
from schemas.tables import AUDIT_TABLES
from transforms.io.bigquery import bigquery_client, create_tables, describe_drift


def main(argv: list[str] | None = None) -> int:
    parser = CommandParser("evpack tables", __doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True, help="Target dataset as PROJECT.DATASET.")
    parser.add_argument(
        "--table",
        action="append",
        choices=sorted(AUDIT_TABLES),
        help="A table to create (repeatable); default: all audit tables.",
    )
    parser.add_argument("--location", help="Dataset location when it is created, e.g. EU.")
    return run_parsed(parser, _create, argv)


def _create(args: argparse.Namespace) -> int:
    dataset_name(args.dataset, "dataset")
    project = args.dataset.split(".")[0]
    tables = [AUDIT_TABLES[name] for name in args.table or AUDIT_TABLES]
    client = bigquery_client(project)
    for table_id, drift in create_tables(client, args.dataset, tables, args.location).items():
        print(f"{table_id} ({describe_drift(drift)})" if drift.changed else table_id)
    views = create_views(client, args.dataset)
    for view_id in views.created:
        print(view_id)
    for name, missing in views.skipped.items():
        print(f"view {name} not created: the dataset has no {', '.join(missing)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
