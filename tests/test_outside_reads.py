"""The guard of tests/outside_reads.py fires: a test reading beside its checkout fails,
naming the file, and one reading its own checkout passes (in a pytest run of its own, so
this session's guard is not the one tested)."""

import os
import subprocess
import sys
from pathlib import Path

from tests.outside_reads import OutsideReads

ROOT = Path(__file__).resolve().parents[1]

CONFTEST = """
from pathlib import Path
from tests.outside_reads import install

def pytest_configure(config):
    install(config, Path(__file__).resolve().parent)
"""
TESTS = """
import glob
from pathlib import Path

HERE = Path(__file__).resolve().parent

def test_reads_its_own_checkout():
    assert (HERE / "own.txt").read_text() == "own"

def test_reads_beside_it():
    assert (HERE / ".." / "shared" / "data.txt").read_text() == "beside"

def test_lists_beside_it():
    assert glob.glob(str(HERE.parent / "shared" / "*.txt"))
"""


def test_a_test_reading_beside_the_checkout_fails_and_names_the_file(tmp_path: Path) -> None:
    checkout, shared = tmp_path / "checkout", tmp_path / "shared"
    checkout.mkdir()
    shared.mkdir()
    (shared / "data.txt").write_text("beside")
    (checkout / "own.txt").write_text("own")
    (checkout / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    (checkout / "conftest.py").write_text(CONFTEST)
    (checkout / "test_reads.py").write_text(TESTS)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:bqemulator"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 passed" in done.stdout and "2 failed" in done.stdout, done.stdout
    assert "PASSED test_reads.py::test_reads_its_own_checkout" in done.stdout
    for test in ("test_reads_beside_it", "test_lists_beside_it"):
        assert f"FAILED test_reads.py::{test} - read outside the checkout" in done.stdout, test
    assert f"{shared / 'data.txt'}" in done.stdout and f"{shared}/*.txt" in done.stdout


def test_what_lies_beside_the_checkout_and_what_does_not(tmp_path: Path) -> None:
    root = tmp_path / "work" / "wt" / "41"
    venv = tmp_path / "work" / "main" / ".venv"
    guard = OutsideReads(root, [venv, tmp_path])  # tmp_path holds the checkout: no effect
    beside = [tmp_path / "work" / "shared" / "data", root / ".." / "42" / "x.py", tmp_path / "y"]
    for path in beside:
        assert guard.outside(str(path)), path
    for path in (root / "tests" / "a.json", venv / "lib" / "site.py", Path(os.sep, "usr", "lib")):
        assert not guard.outside(str(path)), path
