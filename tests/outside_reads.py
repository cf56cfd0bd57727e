"""The suite stands on the repository alone: a test that reads a file beside the checkout
(`../shared/data`, which a user's clone never has) fails, here as well as in the clone.

An audit hook (PEP 578) sees every file Python opens or lists in the test process and
records those beside the checkout; the test (or collection) during which one was read
fails, naming it. Beside the checkout means under a folder that holds it, up to the first
that is the file system's root, the temporary folder or the home folder (a clone in an
empty temporary folder watches that folder; a worktree in /work/wt/41 watches /work/wt and
/work), outside the checkout, the interpreter's folders (a venv beside the checkout), the
temporary folder and the home folder (caches), unless that folder holds the checkout.

Only what Python itself opens is seen: a C library's own reads (Arrow, DuckDB) and
subprocesses are not; `make fresh-check`, the suite run in a clone with nothing beside
it, catches those. Rejected: a list of forbidden paths (`shared/data`), which catches only
the folder we already knew about; raising in the hook, which code that turns any error into
a dead letter would swallow.
"""

import os
import site
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

EVENTS = frozenset({"open", "os.listdir", "os.scandir", "glob.glob"})
"""The audit events that read a file or a folder; each has the path first."""


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _forms(path: Path | str) -> set[str]:
    """The path as given and with its links resolved, absolute and normalised."""
    return {os.path.abspath(path), os.path.realpath(path)}


class OutsideReads:
    """Records the files read beside `root` and fails the report of the phase that read
    them; a pytest plugin with the audit hook `audit`."""

    def __init__(self, root: Path, allowed: Iterable[Path | str]) -> None:
        self.root = str(root.resolve())
        stops = {os.sep, *_forms(tempfile.gettempdir()), *_forms(Path.home())}
        self.watched: list[str] = []
        for folder in map(str, root.resolve().parents):
            if folder in stops:
                break
            self.watched.append(folder)
        self.allowed = [
            form
            for folder in allowed
            for form in _forms(folder)
            if not _inside(self.root, form)  # a folder holding the checkout allows nothing
        ]
        self.reads: list[str] = []

    def outside(self, path: str) -> bool:
        """Whether reading `path` reaches beside the checkout."""
        return all(self._beside(form) for form in _forms(path))

    def _beside(self, path: str) -> bool:
        return (
            any(_inside(path, folder) for folder in self.watched)
            and not _inside(path, self.root)
            and not any(_inside(path, folder) for folder in self.allowed)
        )

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        """The audit hook: never raises, so no read fails because it was watched."""
        if event not in EVENTS or not args or not isinstance(args[0], str | bytes | os.PathLike):
            return
        path = os.fsdecode(args[0])
        if self._beside(os.path.abspath(path)) and self.outside(path):  # cheap test first
            self.reads.append(os.path.abspath(path))

    def _fail(self, report: pytest.TestReport | pytest.CollectReport) -> None:
        if not self.reads:
            return
        reads, self.reads = sorted(set(self.reads)), []
        report.outcome = "failed"
        report.longrepr = (
            "read outside the checkout (the suite stands on the repository alone: commit a "
            "small fixture under tests/ or generate the data): " + ", ".join(reads)
        )

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]):
        report = yield
        self._fail(report)
        return report

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector):
        report = yield
        self._fail(report)
        return report

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """A read after the last report still fails the run."""
        if self.reads:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            reads = ", ".join(sorted(set(self.reads)))
            session.config.get_terminal_writer().line(f"read outside the checkout: {reads}")


def install(config: pytest.Config, root: Path) -> OutsideReads:
    """Watch the session's reads beside `root`, the interpreter's folders allowed."""
    basetemp = config.option.basetemp
    guard = OutsideReads(
        root,
        [
            sys.prefix,
            sys.base_prefix,
            sys.exec_prefix,
            *site.getsitepackages(),
            site.getusersitepackages(),
            tempfile.gettempdir(),
            Path.home(),
            *([basetemp] if basetemp else []),
        ],
    )
    sys.addaudithook(guard.audit)
    config.pluginmanager.register(guard, "outside_reads")
    return guard
