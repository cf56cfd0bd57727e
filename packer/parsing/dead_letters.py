"""Dead letters: what every stage emits for an input it cannot use, and how sinks bound them.

Plain functions, no Beam: every transform that refuses something builds its
dead letter here, so a letter always encodes and always carries the builder
version, whichever stage wrote it. The run summary reads them back here too:
the most frequent kinds of error, and a hint for the input shapes people have
instead of requests (pretty-printed JSON, JSON arrays, LangChain and
LlamaIndex records).
"""

import hashlib
import re
from collections import Counter
from collections.abc import Iterable
from itertools import zip_longest
from typing import Any

from packer import BUILDER_VERSION
from packer.parsing.strict_json import Refused, as_text, loads, printable
from schemas import DeadLetter
from schemas._types import is_identifier


def dead_letter(
    stage: str, error: str, payload: bytes | str, source: str, request_id: Any
) -> DeadLetter:
    """A dead letter stamped with this builder's version; it always encodes, whatever it holds.

    Bytes that are not UTF-8 and lone surrogates are kept as backslash escapes;
    `request_id` is kept only when it is a valid one (the payload still has it).
    """
    return DeadLetter(
        stage=stage,
        error=as_text(error),
        payload=as_text(payload),
        source=as_text(source),
        request_id=request_id if is_identifier(request_id) else None,
        builder_version=BUILDER_VERSION,
    )


SINK_PAYLOAD_BYTES = 1024 * 1024
SINK_ERROR_CHARS = 16 * 1024


def bounded(letter: DeadLetter) -> DeadLetter:
    """The dead letter cut to fit a Pub/Sub message (10 MB) and a BigQuery row, escapes and all.

    A payload over `SINK_PAYLOAD_BYTES` keeps its first bytes, and the error
    says how long it was and its SHA-256; an error over `SINK_ERROR_CHARS`
    (thousands of schema errors) keeps its start. JSON escaping at most
    sextuples text, so the message stays under the limit whatever it holds.
    Batch dead-letter files keep a refused record whole: it is at most
    `--max_record_bytes`, as a longer line is cut off while read and keeps only
    its first bytes (`transforms.bounded_lines.HEAD_BYTES`), size and SHA-256.
    """
    data = letter.payload.encode("utf-8")
    error = letter.error[:SINK_ERROR_CHARS]
    if len(data) <= SINK_PAYLOAD_BYTES and error == letter.error:
        return letter
    payload = letter.payload
    if len(data) > SINK_PAYLOAD_BYTES:
        payload = data[:SINK_PAYLOAD_BYTES].decode("utf-8", errors="ignore")
        digest = hashlib.sha256(data).hexdigest()
        kept = f"its first {SINK_PAYLOAD_BYTES} of {len(data)} bytes"
        error += f" (payload cut to {kept}, sha256 {digest})"
    return letter.model_copy(update={"payload": payload, "error": error})


def error_kind(error: str) -> str:
    """An error with its particulars (quoted values, numbers, hashes) blanked, so that the
    same problem on many records counts as one; control and format characters (a field
    name a record chose) as escapes, as the summary prints it to a terminal.

    A hex hash is blanked whole (`<hex>`) and a number only where it stands alone:
    the digits inside a word (`sha256`, `utf-8`, `E12`) name what the error is about.
    Rejected: blanking every digit, which made `sha256 3bc9...` read `shaN NbcN...`.
    """
    return _shown(_without_ids(error), [])


def top_errors(errors: Iterable[str], n: int = 5) -> list[tuple[str, int]]:
    """The `n` most frequent kinds of error, most frequent first (ties: alphabetical), each
    shown with the numbers that all its errors share (`at least 1 item ..., not 0`); only
    a number that differs between them reads `N`, and ids and hashes are always blanked.

    Rejected: showing the kind (every number `N`), which turned the one refused record of
    a run into `Tuple should have at least N item after validation, not N`.
    """
    numbers: dict[str, list[str | None]] = {}
    counts: Counter[str] = Counter()
    texts: dict[str, str] = {}
    for error in errors:
        text = _without_ids(error)
        kind = _shown(text, [])
        found: list[str | None] = list(_NUMBER.findall(text))
        shared = numbers.setdefault(kind, found)
        numbers[kind] = [a if a == b else None for a, b in zip_longest(shared, found)]
        counts[kind] += 1
        texts.setdefault(kind, text)
    shown = [(_shown(texts[kind], numbers[kind]), count) for kind, count in counts.items()]
    return sorted(shown, key=lambda kv: (-kv[1], kv[0]))[:n]


def _without_ids(error: str) -> str:
    """The error with its quoted values and hex hashes blanked: they name one record."""
    return _HEX.sub("<hex>", _QUOTED.sub("'...'", error))


def _shown(text: str, kept: list[str | None]) -> str:
    """`text` with its standalone numbers as `N` but where `kept` has the number, printable
    and at most 200 characters."""
    each = iter(kept)
    return printable(_NUMBER.sub(lambda m: next(each, None) or "N", text))[:200]


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_HEX = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{16,}\b", re.IGNORECASE)
"""A hash or id in hex: 16 digits or more, letters and digits both."""
_NUMBER = re.compile(r"(?<![\w-])[+-]?\d+(?:[.,]\d+)*(?![\w-])")
"""A number on its own, not the digits of a word (`sha256`, `E1`, `utf-8`)."""
_BRACKET_LINE = re.compile(r"[\[\]{}],?")
_KEY_LINE = re.compile(r'"[^"]*"\s*:')
CONVERT = "`evpack convert --input FILE --output requests.jsonl"
MAPS = '--question "..." --tenant_id T --user_id U --groups G` maps them'

SHAPE_HINTS: dict[str, str] = {
    "pretty_json": (
        "records are lines of pretty-printed JSON: --input takes JSON Lines, one whole "
        f"request object per line, whatever the file's extension; {CONVERT}` rewrites it"
    ),
    "json_array": (
        "records are JSON arrays: --input takes JSON Lines, one request object per line, "
        f"not an array of them; {CONVERT}` writes an array's items one per line"
    ),
    "langchain": (
        "records are LangChain Documents (page_content, metadata): a request needs "
        "request_id, tenant_id, principal, question and candidates; "
        f"{CONVERT} {MAPS} to the candidates of a request (README: Bringing your own data)"
    ),
    "llamaindex": (
        "records are LlamaIndex nodes (NodeWithScore / TextNode): a request needs "
        "request_id, tenant_id, principal, question and candidates; "
        f"{CONVERT} {MAPS} to the candidates of a request (README: Bringing your own data)"
    ),
}
"""What to do about the input shapes people have instead of requests, by shape."""


def _object_shape(value: Any) -> str | None:
    if isinstance(value, list):
        return _object_shape(value[0]) if value else None
    if not isinstance(value, dict):
        return None
    keys = set(value)
    kwargs = value.get("kwargs")
    if "page_content" in keys or (isinstance(kwargs, dict) and "page_content" in kwargs):
        return "langchain"
    if {"node", "score"} <= keys or value.get("class_name") in {"TextNode", "NodeWithScore"}:
        return "llamaindex"
    if "id_" in keys and ("text" in keys or "text_resource" in keys):
        return "llamaindex"
    return None


def _pretty_line(stripped: str) -> bool:
    """Whether a stripped line is one line of pretty-printed JSON: a bracket, or `"key": ...`
    on one line.

    Two anchored patterns, each linear in the line. Rejected: one pattern with
    `\\s*` around `.*` (`\\s*(?:...|"..."\\s*:.*)\\s*`), which backtracked over a
    run of spaces: a 20 kB refused line took a second, a 1 MiB one would hang the summary.
    """
    if _BRACKET_LINE.fullmatch(stripped):
        return True
    key = _KEY_LINE.match(stripped)
    return key is not None and "\n" not in stripped[key.end() :]


def input_shape(payload: str) -> str | None:
    """Which known shape that is not a request a refused record's text has, if any.

    Any text is read within the record limits of `strict_json.loads` (never raises):
    a refused record is often refused for being nested too deep, and a parser or
    walk without that bound would fail on it (RecursionError) where it is summarized.
    """
    stripped = payload.strip()
    value = loads(stripped)
    found = None if isinstance(value, Refused) else _object_shape(value)
    if found is not None:
        return found
    if isinstance(value, list) or stripped.startswith("[{"):
        return "json_array"
    if _pretty_line(stripped):
        return "pretty_json"
    return None


def shape_hints(payloads: Iterable[str]) -> list[str]:
    """A hint per known shape that is not a request found among refused records, most
    frequent first, with how many records have it."""
    counts = Counter(s for s in map(input_shape, payloads) if s is not None)
    return [f"{n} {SHAPE_HINTS[shape]}" for shape, n in counts.most_common()]
