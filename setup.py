"""The per-text kernels of the canonical form (packer/_native.c), the one thing pyproject.toml
cannot declare without a notice: built when a C compiler is present; without one the install
still succeeds and packer.records uses its pure-Python twins (same results, slower on texts
seen for the first time).

Rejected: `[tool.setuptools.ext-modules]` in pyproject.toml, which setuptools calls
experimental on every install. The editable install's note about folders named like a
package is silenced: it is setuptools' general advice, nothing a user of `make demo` can act
on (the checkout's own folders are the packages).
"""

import warnings

from setuptools import Extension, setup

warnings.filterwarnings("ignore", message="Editable installation")
setup(ext_modules=[Extension("packer._native", sources=["packer/_native.c"], optional=True)])
