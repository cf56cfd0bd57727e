"""The evidence packer: pure decision logic, no Beam imports.

`pack_request` is the one entry point every pipeline and benchmark calls.
"""

from packer.catalog import Catalog
from packer.pack import PackResult, clear_memos, pack_request
from packer.tokens import TokenCounter, load_encoding
from packer.version import BUILDER_VERSION

__all__ = [
    "BUILDER_VERSION",
    "Catalog",
    "PackResult",
    "TokenCounter",
    "clear_memos",
    "load_encoding",
    "pack_request",
]
