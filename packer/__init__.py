"""The evidence packer: pure decision logic, no Beam imports.

`pack_request` is the one entry point every pipeline and benchmark calls.
"""

from packer.catalog import Catalog
from packer.pack import PackResult, pack_request
from packer.runtime import PackerRuntime
from packer.tokens import TokenCounter, load_encoding
from packer.version import BUILDER_VERSION

__all__ = [
    "BUILDER_VERSION",
    "Catalog",
    "PackResult",
    "PackerRuntime",
    "TokenCounter",
    "load_encoding",
    "pack_request",
]
