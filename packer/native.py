"""The C kernels of `packer/_native.c`, or None where they were not built.

Setup builds them when a C compiler is present (`pyproject.toml`); each has a
pure-Python twin, in the module that uses it, which defines what it computes
(`tests/test_native.py` holds each pair equal) and runs in its place here
when `kernels` is None. Packing output never depends on which ran.

Only per-character and per-word work is in C (a text's words, a pair's shared words
and their alignment, the texts holding a word, the terms a text holds, its runs of
capitalized words). Rejected:
compiling the decision modules themselves (selection, gates, dedup, layout, outputs,
tokens, units, resolution, order) with mypyc from their type hints. Built and timed
on the speed workload (2026-12-02, 1,000 requests of 10 paragraphs, same process
setup): warm packing 0.943x the floor against 0.952x for the plain modules, cold
0.372x against 0.345x, within the machine's noise. Their time is spent in dicts,
sets, dataclasses and pydantic models that stay Python objects; the price would have
been a second build of every module, a compiled module silently shadowing its edited
source until rebuilt, and no monkeypatching in tests.
"""

from types import ModuleType

kernels: ModuleType | None
try:
    from packer import _native as kernels
except ImportError:  # no C compiler at install: the pure-Python twins, same results
    kernels = None
