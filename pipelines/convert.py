"""`evpack convert`: other tools' retrieval results into request records for `evpack batch`.

    evpack convert --input 'retrieved/*.json' --output requests.jsonl \\
        --request_id q1 --question "..." --tenant_id acme --user_id ana --groups support

Reads LangChain Documents, LlamaIndex nodes (with their scores), JSON arrays and
pretty-printed JSON, and writes one nested request per line
(`packer.parsing.foreign_records`; the field mapping is in docs/input.md, "Other
tools' results"). Items it cannot read or requests that would not validate go,
with the reason, to `--dead_letters` (default: next to the output). The
summary says which provenance the input lacked, since the packer will exclude
those candidates (`missing_provenance`). Plain Python, not a Beam job: the
input is what one retriever returned, and a JSON array cannot be split
between workers anyway.
"""

import argparse
import os
import sys
from collections.abc import Iterator

from apache_beam.io.filesystems import FileSystems

from packer.parsing.foreign_records import Conversion, Supplied, convert, record_line
from pipelines.command import CommandParser, UsageError, run_parsed
from pipelines.options.sinks import check_writable, within
from transforms.record_files import matchable


def _parser() -> CommandParser:
    parser = CommandParser("evpack convert", __doc__.splitlines()[0])
    add = parser.add_argument
    add("--input", action="append", required=True, help="File or glob (local or gs://); repeat.")
    add("--output", required=True, help="The JSONL file of request records to write.")
    add("--dead_letters", help="Where refused items go (default: OUTPUT.dead_letters.jsonl).")
    add("--overwrite", action="store_true", help="Replace existing output files.")
    add("--request_id", help="Request id of items whose metadata names none.")
    add("--question", help="The question the items were retrieved for.")
    add("--tenant_id", help="Tenant of the request (default: metadata request_tenant_id).")
    add("--user_id", help="The principal: who asks.")
    add("--groups", default="", help="The principal's groups, comma-separated.")
    add("--clearance", help="The principal's clearance (default: the request schema's).")
    add("--as_of", help="ISO-8601 time the revisions must apply at (default: event time).")
    add("--facets", default="", help="Facets of the question, comma-separated.")
    add(
        "--history",
        action="store_true",
        help="Set the requests' history: earlier effective revisions stay.",
    )
    add(
        "--hash_text",
        action="store_true",
        help=(
            "Set text_sha256 to the SHA-256 of each text where metadata has none. It then "
            "proves only that the text was not changed after conversion."
        ),
    )
    return parser


def _listed(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def _read(paths: list[str]) -> Iterator[tuple[str, bytes]]:
    for path in paths:
        with FileSystems.open(path) as handle:
            yield path, handle.read()


def _write(path: str, lines: list[str]) -> None:
    with FileSystems.create(path) as handle:
        handle.write("".join(line + "\n" for line in lines).encode("utf-8"))


def summary(result: Conversion, output: str, dead_letters: str) -> str:
    """What was read and written, and which provenance is missing, with how to supply it."""
    shapes = ", ".join(f"{shape} {n}" for shape, n in sorted(result.shapes.items())) or "none"
    lines = [
        f"evpack convert: items read: {shapes}",
        f"  records written  {len(result.records)} ({result.candidates} converted candidates)",
        f"  dead letters     {len(result.dead_letters)}",
        f"  requests         {output}",
    ]
    if result.dead_letters:
        lines.append(f"  dead letters     {dead_letters}")
    for name, count in sorted(result.missing.items()):
        lines.append(
            f"  missing {name} in {count} of {result.candidates} candidates: excluded as "
            "missing_provenance unless supplied (metadata keys, README 'Bringing your own data')"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return run_parsed(_parser(), _convert, argv)


def _refuse_writing_inputs(inputs: list[str], outputs: dict[str, str]) -> None:
    """An output that is one of the inputs (by any name: links resolved) would be emptied
    or replaced while, or before, it is read."""
    for flag, target in outputs.items():
        same = next((path for path in inputs if within(path, target)), None)
        if same is not None:
            raise UsageError(f"--{flag} {target!r} is an input ({same}); name another file")


def _convert(args: argparse.Namespace) -> int:
    dead_path = args.dead_letters or f"{args.output.removesuffix('.jsonl')}.dead_letters.jsonl"
    for path, flag in ((args.output, "output"), (dead_path, "dead_letters")):
        if os.path.isdir(path):
            raise UsageError(f"--{flag} {path!r} is a folder; name the file to write")
        if FileSystems.exists(path) and not args.overwrite:
            raise UsageError(f"{path} exists; pass --overwrite")
        check_writable(os.path.dirname(path) or ".", flag)
    if within(dead_path, args.output):
        raise UsageError(
            f"--dead_letters {dead_path!r} is --output: the dead letters would replace the "
            "records; name another file"
        )
    patterns = [matchable(pattern) for pattern in args.input]
    paths = [m.path for r in FileSystems.match(patterns) for m in r.metadata_list]
    if not paths:
        raise UsageError(f"no file matches --input {' '.join(args.input)}")
    _refuse_writing_inputs(paths, {"output": args.output, "dead_letters": dead_path})
    supplied = Supplied(
        request_id=args.request_id,
        question=args.question,
        tenant_id=args.tenant_id,
        user_id=args.user_id,
        groups=_listed(args.groups),
        clearance=args.clearance,
        as_of=args.as_of,
        facets=_listed(args.facets),
        history=args.history,
        hash_text=args.hash_text,
    )

    result = convert(_read(sorted(paths)), supplied)
    _write(args.output, [record_line(r) for r in result.records])
    if result.dead_letters or FileSystems.exists(dead_path):
        _write(dead_path, [d.model_dump_json() for d in result.dead_letters])
    print(summary(result, args.output, dead_path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
