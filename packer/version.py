"""The builder version stamped on every prompt, manifest and run record: the package's
version and the commit its code was built from (`evidence-packer-0.1.0+1a2b3c4d5e6f`).

The commit comes from, in order: the stamp a build wrote into the package
(`packer/_stamp.json`, by the build step of setup.py: a wheel, `pip install .`,
the image); else the git checkout the code is imported from, when git tracks
this file there (a source tree, an editable install), `.dirty` when tracked
files differ from HEAD; else `unknown`. Never a guess: the stamp is written into
a build, never into the source tree, so an editable install cannot carry a stale
one, and a wheel installed into a venv inside a checkout is not taken for the
checkout (git does not track it there). Standard library only: `evpack --version`
loads this file alone. Rejected: the version alone (every commit said 0.1.0),
setuptools-scm (a build dependency, and a version that changes with every commit).
"""

import json
import os
import re
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

STAMP = "_stamp.json"
"""The file a build writes beside this one: `{"commit": "<40 hex digits>[.dirty]"}`."""
UNKNOWN = "unknown"
COMMIT = re.compile(r"[0-9a-f]{40}(\.dirty)?")
HERE = Path(__file__).resolve().parent


def package_version() -> str:
    """The installed distribution's version; `0+source` for a tree never installed."""
    try:
        return version("evidence-packer")
    except PackageNotFoundError:
        return "0+source"


def _git(directory: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(
            ["git", "-C", str(directory), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.SubprocessError):
        return None


def git_commit(directory: Path, tracked: str) -> str | None:
    """HEAD of the git checkout holding `directory`, when git tracks its file `tracked`
    there, `.dirty` when tracked files differ from HEAD; None otherwise (no checkout, no
    git, a file git does not track)."""
    owned = _git(directory, "ls-files", "--error-unmatch", tracked)
    head = _git(directory, "rev-parse", "HEAD")
    if owned is None or head is None or owned.returncode or head.returncode:
        return None
    status = _git(directory, "status", "--porcelain", "--untracked-files=no")
    if status is None or status.returncode:
        return None
    commit = head.stdout.strip() + (".dirty" if status.stdout.strip() else "")
    return commit if COMMIT.fullmatch(commit) else None


def read_stamp(path: Path) -> str | None:
    """The commit a build stamped (None: no stamp); `unknown` for a stamp that holds no
    commit."""
    if not path.is_file():
        return None
    try:
        commit = json.loads(path.read_text(encoding="utf-8"))["commit"]
    except (OSError, ValueError, KeyError, TypeError):
        return UNKNOWN
    return commit if isinstance(commit, str) and COMMIT.fullmatch(commit) else UNKNOWN


def build_commit(directory: Path = HERE) -> str:
    """The commit the code in `directory` was built from (see the module docstring)."""
    return read_stamp(directory / STAMP) or git_commit(directory, "version.py") or UNKNOWN


def builder_version(commit: str) -> str:
    """`evidence-packer-<version>+<commit>`: the commit's first 12 hex digits, `.dirty`
    kept, or `unknown`."""
    short = UNKNOWN if commit == UNKNOWN else commit[:12] + commit[40:]
    return f"evidence-packer-{package_version()}+{short}"


BUILDER_VERSION = builder_version(build_commit())
