"""The two build steps pyproject.toml cannot declare quietly: the C kernels and the stamp.

The per-text kernels of the canonical form (packer/_native.c) are built when a C compiler
is present; without one the install still succeeds and packer.records uses its pure-Python
twins (same results, slower on texts seen for the first time). Rejected:
`[tool.setuptools.ext-modules]` in pyproject.toml, which setuptools calls experimental on
every install. The editable install's note about folders named like a package is silenced:
it is setuptools' general advice, nothing a user of `make demo` can act on (the checkout's
own folders are the packages).

A build (a wheel, `pip install .`, the image) writes `packer/_stamp.json` into what it
builds, never into the source tree: the commit of the git checkout it is built from, else
`EVPACK_COMMIT` (the image build passes it, as its sources are copied without `.git`); with
neither, no stamp, and the package says `unknown` (`packer.version`). An editable install
writes none: it reads the checkout itself at run time.
"""

import json
import os
import sys
import warnings
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

sys.path.insert(0, str(Path(__file__).resolve().parent / "packer"))
from version import COMMIT, STAMP, git_commit  # the file alone: no package import


def stamp(build_lib: Path, source: Path) -> str | None:
    """Write the stamp of the checkout `source` (else `EVPACK_COMMIT`) into the built
    package under `build_lib`; returns the commit stamped, None when none is known."""
    commit = git_commit(source / "packer", "version.py") or os.environ.get("EVPACK_COMMIT", "")
    if not COMMIT.fullmatch(commit):
        return None
    target = build_lib / "packer" / STAMP
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"commit": commit}) + "\n", encoding="utf-8")
    return commit


class StampedBuild(build_py):
    def run(self) -> None:
        super().run()
        if not getattr(self, "editable_mode", False):
            stamp(Path(self.build_lib), Path(__file__).resolve().parent)


if __name__ == "__main__":
    warnings.filterwarnings("ignore", message="Editable installation")
    setup(
        cmdclass={"build_py": StampedBuild},
        ext_modules=[
            Extension("packer._native", sources=["packer/_native.c"], optional=True),
            Extension(
                "packer._pretokenize",
                sources=["packer/_pretokenize.c"],
                depends=["packer/_pretokenize_table.h"],
                optional=True,
            ),
        ],
    )
