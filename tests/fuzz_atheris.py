"""Coverage-guided fuzzing of the parse boundary with atheris: optional, `make fuzz`.

The hypothesis targets (`tests.test_fuzz_boundary`) draw inputs from grammars we
wrote; atheris mutates bytes toward new branches of the checks themselves
(`packer.parsing.strict_json`, `packer.parsing.request_records`), which is how a
bracket left open or an unterminated escape is found without anyone thinking
of it. One input is one record, read three ways: a batch record in auto shape
(decoded, then assembled), a Pub/Sub message (split, each record parsed), and
a catalog row. Any exception other than the catalog's ValueError is a
finding; atheris stops on it and writes the input to `crash-*`. It starts from
the lines of `samples/` and keeps what it finds in `out/fuzz-corpus/`.

    make fuzz                    # 60 s
    make fuzz FUZZ_SECONDS=3600  # longer; any libFuzzer flag can follow in FUZZ_FLAGS

Not part of `make test`: it needs the `fuzz` extra and its time is open-ended.
"""

import contextlib
import sys

import atheris

with atheris.instrument_imports(
    include=["packer.parsing.strict_json", "packer.parsing.request_records"]
):
    from packer.parsing.request_records import assemble, decode, parse_record
    from packer.parsing.strict_json import decode_text, loads

from schemas import DeadLetter
from tests.batch_run import ROOT, SAMPLES
from tests.test_fuzz_boundary import assert_encodes
from transforms.catalog.side_input import parse_catalog_row
from transforms.io.pubsub import split_payload

MAX_BYTES = 1 << 20


def one_input(data: bytes) -> None:
    """Every way a record is read gives a value or a dead letter that encodes."""
    decoded = decode("fuzz.jsonl", data, "auto", MAX_BYTES)
    if isinstance(decoded, DeadLetter):
        assert_encodes(decoded)
    else:
        _, letters = assemble(*decoded[:1], [decoded[1]])
        for letter in letters:
            assert_encodes(letter)
    records = split_payload(data, MAX_BYTES)
    for record in [] if isinstance(records, str) else records:
        parsed = parse_record("fuzz#1", record, MAX_BYTES)
        for letter in parsed if isinstance(parsed, list) else []:
            assert_encodes(letter)
    with contextlib.suppress(ValueError):  # the trusted catalog refuses a bad row so
        parse_catalog_row("fuzz.jsonl", data)
    text = decode_text(data, MAX_BYTES)
    if isinstance(text, str):
        loads(text)


CORPUS = ROOT / "out" / "fuzz-corpus"
"""Where the inputs found so far are kept, seeded with every line of the samples."""


def seed_corpus() -> None:
    """Start from real records, so mutations begin past the JSON syntax."""
    CORPUS.mkdir(parents=True, exist_ok=True)
    for path in [*SAMPLES.glob("*.jsonl")]:
        for i, line in enumerate(path.read_bytes().splitlines()):
            (CORPUS / f"{path.stem}-{i}").write_bytes(line)


def main() -> None:
    seed_corpus()
    atheris.Setup([*sys.argv, str(CORPUS)], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
