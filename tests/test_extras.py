"""The extras install together: one version of each package any two of them name.

The `emulators` extra pins duckdb 1.5.5: bqemulator loads DuckDB's spatial extension
when it starts and fails without it, and offline that extension comes only from the
`duckdb-extension-spatial` wheel, published for duckdb 1.5.5 alone (2.0.1 has none).
The `report` extra alone resolves to the newest duckdb (2.0.1 when this was written);
installed with `emulators` in one resolution (`pip install -e '.[report,emulators]'`,
as `.ci/setup-emulators` does) both get 1.5.5, which the report runs on. Installed one
after the other, pip replaces the report's duckdb: these tests then fail, rather than
the report quietly running on a DuckDB other than the one resolved for it.
"""

import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[1]
EXTRAS: dict[str, list[str]] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
    "optional-dependencies"
]


def _requirements(extra: str) -> list[Requirement]:
    return [Requirement(text) for text in EXTRAS[extra]]


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def test_a_package_two_extras_name_has_a_version_both_take() -> None:
    """Every pin (`==`) of one extra is inside every other extra's range for that package,
    so any set of extras resolves together (duckdb: emulators' 1.5.5 in report's >=1.1)."""
    by_package: dict[str, list[tuple[str, SpecifierSet]]] = {}
    for extra in EXTRAS:
        for req in _requirements(extra):
            by_package.setdefault(req.name.lower(), []).append((extra, req.specifier))
    shared = {name: specs for name, specs in by_package.items() if len(specs) > 1}
    assert "duckdb" in shared
    for name, specs in shared.items():
        pins = [s.version for _, spec in specs for s in spec if s.operator == "=="]
        for pin in pins:
            refusing = [extra for extra, spec in specs if not spec.contains(pin)]
            assert refusing == [], f"{name}=={pin} is outside {refusing}'s range"


def test_the_installed_extras_are_met_and_pip_check_is_clean() -> None:
    """The environment's packages meet every requirement of each extra it has installed
    (pip check reads the requirements of the installed distributions, not which of our
    extras were meant), and pip check finds nothing broken."""
    unmet = []
    for extra in EXTRAS:
        versions = {req: _installed(req.name) for req in _requirements(extra)}
        if any(version is None for version in versions.values()):
            continue  # this extra is not installed here
        unmet += [
            f"{extra}: {req} but {version} is installed"
            for req, version in versions.items()
            if version is not None and not req.specifier.contains(version, prereleases=True)
        ]
    assert unmet == []
    done = subprocess.run(
        [sys.executable, "-m", "pip", "check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
