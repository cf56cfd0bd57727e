"""Bytes of one input record -> a JSON value, or the reason it is refused. Total: never raises.

Input records come from anyone, so every limit is checked before the parser
runs, where a check can be made without parsing, each in time linear in the
record (a record of 4 MiB of any shape is checked in well under a second):
- size: at most `max_bytes` bytes (the `--max_record_bytes` flag);
- encoding: strict UTF-8 (the byte offset of the first invalid byte is named);
  one leading byte-order mark is dropped, as editors on Windows write one;
- nesting: arrays and objects at most `MAX_DEPTH` deep, closed or left open
  (the parser and every later step recurse; a request needs 4 levels);
- number literals: at most `MAX_NUMBER_CHARS` characters (Python refuses
  integers of more than 4,300 digits with a ValueError, and a row stores int64).
The parser then refuses what JSON does not define or leaves ambiguous: `NaN`
and `Infinity` literals, and an object naming a key twice (parsers disagree on
which copy wins, so a second tenant_id could mean one thing here and another
downstream).

Rejected alternative: parse first and catch RecursionError / ValueError only.
The parser's own limits are not ours (a 900-deep value passes it, then breaks
a later recursive step), and catching alone would still spend the parse.
"""

import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

MAX_DEPTH = 32
MAX_NUMBER_CHARS = 64
BOM = b"\xef\xbb\xbf"

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
"""A JSON string, or an unterminated one up to the end. Every quote starts a match, so a
match never fails and is never tried again from a later quote: a pattern that required
the closing quote took time quadratic in the length of `"\\"\\"...` (80 kB: 13 s).
Written as runs of plain characters between escapes ("unrolled"), which the regex
engine scans a run at a time: 3x faster than one alternation per character
(`"(?:[^"\\]|\\.)*...`, the same language), which cost two thirds of a record's
checks (170 us for a 10 kB request)."""


def _outside_strings(text: str) -> str:
    """`text` with its JSON strings blanked to `""`, found at C speed: escaped backslashes
    and quotes dropped, then the text split on the quotes left.

    It blanks what `_STRING` blanks up to the first backslash outside a string,
    and a backslash outside a string is no JSON: the parser stops there, so the
    limits read up to that point are the ones that matter. Only what the parser
    never reaches may be seen differently: a limit it breaks is confirmed with
    `_STRING` before a record is refused for it, so every reason is as before.
    A 10 kB request of the speed workload (non-ASCII text, some 650 quotes,
    most passages quoting something, so escapes cannot be assumed away): 47 us
    against the pattern's 77 us, at a load average of 2.7 on 2 cores.
    """
    parts = text.replace("\\\\", "").replace('\\"', "").split('"')
    return '""'.join(parts[::2]) + ('""' if len(parts) % 2 == 0 else "")


_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_LONG_NUMBER = re.compile(f"[-+0-9.eE]{{{MAX_NUMBER_CHARS + 1},}}")


@dataclass(frozen=True)
class Refused:
    """Why a record is not a JSON value we accept; `text` is what can be shown of it."""

    reason: str
    text: str


def as_text(payload: bytes | str) -> str:
    """Any payload as text that encodes to UTF-8: invalid bytes become `\\xNN` escapes."""
    if isinstance(payload, bytes):
        return payload.decode("utf-8", errors="backslashreplace")
    return payload.encode("utf-8", errors="backslashreplace").decode("utf-8")


@dataclass(frozen=True)
class Unreadable:
    """What a file reader gives in place of a record's bytes when (the rest of) a file cannot
    be read: a truncated or corrupt file becomes one refused record that names it, not a
    failed job nor records missing without a word. Also a record too large to hold: `head`
    is its first bytes, kept for the dead letter."""

    reason: str
    head: bytes = b""


def decode_text(payload: bytes | Unreadable, max_bytes: int | None = None) -> str | Refused:
    """The record's text: size first (unless `max_bytes` is None), then strict UTF-8 (one
    leading BOM dropped). Every reader of records decodes them here."""
    if isinstance(payload, Unreadable):
        return Refused(payload.reason, as_text(payload.head))
    if max_bytes is not None and len(payload) > max_bytes:
        return Refused(
            f"record of {len(payload)} bytes exceeds --max_record_bytes={max_bytes}",
            as_text(payload),
        )
    body = payload.removeprefix(BOM)
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as err:
        return Refused(
            f"invalid UTF-8 at byte {err.start + len(payload) - len(body)}: {err.reason}",
            as_text(payload),
        )


def _too_deep(outside: str) -> bool:
    """Whether brackets open deeper than MAX_DEPTH anywhere, closed or not.

    The running count of open brackets bounds the parser's recursion up to the
    point where it would fail. Rejected: stripping innermost pairs level by
    level, which never saw brackets left open: 2,000 `[` escaped as a
    RecursionError.
    """
    steps = map(_STEP.__getitem__, _NOT_BRACKETS.sub("", outside))
    return max(accumulate(steps, initial=0)) > MAX_DEPTH


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def shown(text: str, limit: int = 64) -> str:
    """A string for an error message: its repr, cut to `limit` characters."""
    return repr(text[:limit]) + ("..." if len(text) > limit else "")


def printable(text: str) -> str:
    """`text` with every control, format, surrogate, private-use or unassigned character
    (Unicode categories C*: escapes, bidi overrides, zero-width marks) written as its
    `\\x`/`\\u` escape, so a label shows what the data holds and cannot reorder or
    hide its neighbours, in a chart, a terminal or a page. Other text is kept as is.
    A printable string (`str.isprintable`: no C* and no separator but the space) holds
    none, and is returned at C speed: most labels are, and reports print many."""
    if text.isprintable():
        return text
    return "".join(
        ch.encode("unicode_escape").decode("ascii")
        if unicodedata.category(ch).startswith("C")
        else ch
        for ch in text
    )


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    record = dict(pairs)
    if len(record) != len(pairs):
        twice = next(k for k, n in Counter(k for k, _ in pairs).items() if n > 1)
        raise ValueError(f"key {shown(twice)} appears twice in one object")
    return record


STRICT_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)
"""The parser with the refusals above (NaN, a key twice), for readers of several values."""


def _beyond_limits(outside: str) -> str | None:
    """Which limit the text outside the strings breaks, if any."""
    if _too_deep(outside):
        return f"invalid JSON: nested deeper than {MAX_DEPTH} levels"
    if _LONG_NUMBER.search(outside):
        return f"invalid JSON: a number literal longer than {MAX_NUMBER_CHARS} characters"
    return None


def loads(text: str) -> Any | Refused:
    """Parse JSON text within the limits above; a `Refused` says which one failed."""
    refused = _beyond_limits(_outside_strings(text)) and _beyond_limits(_STRING.sub('""', text))
    if refused:
        return Refused(refused, text)
    try:
        return STRICT_DECODER.decode(text)
    except ValueError as err:
        return Refused(f"invalid JSON: {err}", text)
