"""The names and defaults every stage shares: output tags, metrics, file formats, sizes.

One small module without Beam or parsing in it, so a transform that only
dead-letters, a pipeline's flags and the tests spell each name once. Rejected:
keeping them in the request parser, which made every transform import it for
a string; and one per transform (`DEFAULT_WINDOW_SECONDS` beside the windowing),
which made the flags import each transform for its default.
"""

from typing import Literal

from schemas.tables import FileType

DEAD_LETTERS = "dead_letters"
"""The tag of every transform's dead-letter output (and the name of their table)."""

METRICS_NAMESPACE = "evpack"
"""The namespace of every counter and distribution (`pipelines.summary` reads it)."""

FileFormat = FileType
"""How a file of records is stored: requests, catalog documents, prompts, answers."""

InputShape = Literal["auto", "nested", "flat"]
"""How request records carry their candidates (see `--input_shape`)."""

DEFAULT_MAX_RECORD_BYTES = 4 * 1024 * 1024
"""Records larger than this are dead-lettered unparsed (`--max_record_bytes`)."""

DEFAULT_CATALOG_REFRESH_SECONDS = 60.0
"""The revocation delay: how often a catalog file is re-read, a lookup cached."""

DEFAULT_CATALOG_CACHE_ENTRIES = 100_000
"""Catalog entries a Bigtable-mode packing thread keeps cached."""

DEFAULT_DEDUP_TTL_SECONDS = 24 * 3600
"""How long streaming remembers a request_id (`--dedup_ttl_seconds`)."""

DEFAULT_WINDOW_SECONDS = 60
"""The event-time window of streaming exclusion counts (`--window_seconds`)."""

DEFAULT_PROMPT_TTL_SECONDS = 7 * 24 * 3600
"""How long the streaming verifier holds a prompt for its answer (`--prompt_ttl_seconds`)."""
