"""Dead letters: what every stage emits for an input it cannot use, and how sinks bound them.

Plain functions, no Beam: every transform that refuses something builds its
dead letter here, so a letter always encodes and always carries the builder
version, whichever stage wrote it.
"""

import hashlib
from typing import Any

from packer import BUILDER_VERSION
from schemas import DeadLetter
from schemas._types import is_identifier
from transforms.strict_json import as_text


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
    its first bytes (`transforms.record_files.HEAD_BYTES`), size and SHA-256.
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
