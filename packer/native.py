"""The C kernels of `packer/_native.c`, or None where they were not built.

Setup builds them when a C compiler is present (`pyproject.toml`); each has a
pure-Python twin, in the module that uses it, which defines what it computes
(`tests/test_native.py` holds each pair equal) and runs in its place here
when `kernels` is None. Packing output never depends on which ran.
"""

from types import ModuleType

kernels: ModuleType | None
try:
    from packer import _native as kernels
except ImportError:  # no C compiler at install: the pure-Python twins, same results
    kernels = None
