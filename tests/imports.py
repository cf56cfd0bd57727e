"""The imports a source file makes, read from its syntax tree (lazy ones inside functions too).

Shared by the layering test (`test_architecture`) and the wheel's dependency check
(`test_wheel`), which both walk every module of the packages, subpackages included.
"""

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGES = ("schemas", "packer", "transforms", "pipelines")
"""The project's layers, bottom first: an import only points down this list."""


def imported_modules(path: Path) -> Iterator[tuple[str, int]]:
    """Each absolute module name `path` imports, with the line of the import."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, node.lineno


def package_sources(root: Path, package: str) -> list[Path]:
    """Every Python file of `package` under `root`, its subpackages included."""
    return sorted((root / package).rglob("*.py"))
