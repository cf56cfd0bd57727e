"""The input contract as JSON Schema, generated from the `Request` model.

`evpack schema` rewrites `schemas/request.schema.json`; `--check` only verifies
it is current (a test does the same).
"""

import argparse
import json
import sys
from pathlib import Path

import schemas
from pipelines.command import CommandParser, run_parsed
from schemas import Request

DEFAULT_PATH = Path(schemas.__file__).parent / "request.schema.json"


def request_schema_text() -> str:
    """The JSON Schema of one request record, as committed (sorted keys, newline)."""
    return json.dumps(Request.model_json_schema(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = CommandParser("evpack schema", __doc__)
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_PATH,
        help="where to write (default: request.schema.json in the installed `schemas` package)",
    )
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    return run_parsed(parser, _write, argv)


def _write(args: argparse.Namespace) -> int:
    text = request_schema_text()
    if args.check:
        current = args.out.read_text() if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is stale: run `evpack schema`", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
