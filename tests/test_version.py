"""The version names the code: the package version and the commit, from a build's stamp,
else the git checkout the code runs from, else `unknown`, never a wrong commit."""

import importlib.util
import json
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from packer.version import (
    BUILDER_VERSION,
    UNKNOWN,
    build_commit,
    builder_version,
    git_commit,
    package_version,
    read_stamp,
)

ROOT = Path(__file__).resolve().parents[1]


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A git checkout holding packer/version.py, committed."""
    repo = tmp_path / "repo"
    (repo / "packer").mkdir(parents=True)
    (repo / "packer" / "version.py").write_text("x = 1\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "one")
    return repo


def test_a_checkout_names_its_head_and_says_when_it_differs(checkout: Path) -> None:
    head = _git(checkout, "rev-parse", "HEAD")
    packer = checkout / "packer"
    assert git_commit(packer, "version.py") == head == build_commit(packer)
    (packer / "new.py").write_text("untracked\n")  # an untracked file changes no code run
    assert build_commit(packer) == head
    (packer / "version.py").write_text("x = 2\n")
    assert build_commit(packer) == f"{head}.dirty"
    assert git_commit(packer, "new.py") is None  # a file git does not track: no commit


def test_a_stamp_wins_and_without_stamp_or_checkout_the_commit_is_unknown(
    checkout: Path, tmp_path: Path
) -> None:
    stamped = "ab" * 20
    (checkout / "packer" / "_stamp.json").write_text(json.dumps({"commit": stamped}))
    assert build_commit(checkout / "packer") == stamped
    for junk in ("{", '{"commit": "main"}', '{"commit": 7}', "[]"):
        (checkout / "packer" / "_stamp.json").write_text(junk)
        assert read_stamp(checkout / "packer" / "_stamp.json") == UNKNOWN
    alone = tmp_path / "site-packages" / "packer"
    alone.mkdir(parents=True)
    (alone / "version.py").write_text("x = 1\n")
    assert read_stamp(alone / "_stamp.json") is None
    assert build_commit(alone) == UNKNOWN


def test_the_builder_version_carries_the_version_and_the_commit() -> None:
    commit = "0123456789abcdef" * 2 + "01234567"
    assert builder_version(commit) == f"evidence-packer-{package_version()}+0123456789ab"
    assert builder_version(f"{commit}.dirty").endswith("+0123456789ab.dirty")
    assert builder_version(UNKNOWN).endswith("+unknown")
    assert BUILDER_VERSION.startswith(f"evidence-packer-{package_version()}+")


def _setup_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("evpack_setup", ROOT / "setup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # not __main__: setup() is not called
    return module


def test_a_build_stamps_the_commit_it_is_built_from_or_none(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stamp = _setup_module().stamp
    monkeypatch.delenv("EVPACK_COMMIT", raising=False)
    head = _git(checkout, "rev-parse", "HEAD")
    assert stamp(tmp_path / "lib", checkout) == head
    assert read_stamp(tmp_path / "lib" / "packer" / "_stamp.json") == head
    assert not (checkout / "packer" / "_stamp.json").exists()  # never in the source tree
    copied = tmp_path / "copy"  # sources copied without .git, as the image's are
    (copied / "packer").mkdir(parents=True)
    assert stamp(tmp_path / "none", copied) is None
    assert not (tmp_path / "none").exists()
    monkeypatch.setenv("EVPACK_COMMIT", "cd" * 20)
    assert stamp(tmp_path / "image", copied) == "cd" * 20
    monkeypatch.setenv("EVPACK_COMMIT", "HEAD")
    assert stamp(tmp_path / "bad", copied) is None
