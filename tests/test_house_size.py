"""The house's size rules, over every module outside tests/ and benchmarks/.

No module over 400 lines, no function over 60 lines, no function over 6
parameters (`self`/`cls` not counted; `*args` and `**kwargs` count as one
each), so a newcomer can read each module and each function in one sitting.
A module that outgrows them is split by idea, not trimmed to fit.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
MAX_PARAMETERS = 6
EXEMPT = ("tests", "benchmarks", ".venv", "build", "out")


def sources(root: Path) -> list[Path]:
    """Every Python module of the project under `root`, outside the exempt folders."""
    return sorted(
        path
        for path in root.rglob("*.py")
        if path.relative_to(root).parts[0] not in EXEMPT
        and not any(part.startswith(".") for part in path.relative_to(root).parts)
    )


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The function's parameters, `self` and `cls` not counted."""
    args = node.args
    named = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    count = len(named) + (args.vararg is not None) + (args.kwarg is not None)
    return count - (bool(named) and named[0].arg in {"self", "cls"})


def breaches(path: Path, root: Path) -> list[str]:
    """Each size rule `path` breaks, as `file: what`."""
    text = path.read_text(encoding="utf-8")
    name = path.relative_to(root).as_posix()
    found = []
    if (lines := len(text.splitlines())) > MAX_MODULE_LINES:
        found.append(f"{name}: {lines} lines")
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if (length := node.end_lineno - node.lineno + 1) > MAX_FUNCTION_LINES:
            found.append(f"{name}:{node.lineno} {node.name}: {length} lines")
        if (count := parameters(node)) > MAX_PARAMETERS:
            found.append(f"{name}:{node.lineno} {node.name}: {count} parameters")
    return found


def test_no_module_or_function_outgrows_the_house_rules() -> None:
    found = [breach for path in sources(ROOT) for breach in breaches(path, ROOT)]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("x = 1\n" * 401, ["m.py: 401 lines"]),
        ("def f():\n" + "    x = 1\n" * 60, ["m.py:1 f: 61 lines"]),
        ("def f():\n" + "    x = 1\n" * 59, []),
        ("def f(a, b, c, d, e, f, g): ...\n", ["m.py:1 f: 7 parameters"]),
        ("class C:\n    def f(self, a, b, c, d, e, f): ...\n", []),
        ("def f(a, *b, c, d, e, **f): ...\n", []),
        ("def f(a, *b, c, d, e, f, **g): ...\n", ["m.py:1 f: 7 parameters"]),
    ],
)
def test_the_check_finds_each_breach(tmp_path: Path, source: str, expected: list[str]) -> None:
    (tmp_path / "m.py").write_text(source)
    assert breaches(tmp_path / "m.py", tmp_path) == expected


def test_tests_and_benchmarks_are_exempt(tmp_path: Path) -> None:
    for folder in ("tests", "benchmarks", "packer"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.py").write_text("x = 1\n")
    assert [p.relative_to(tmp_path).as_posix() for p in sources(tmp_path)] == ["packer/m.py"]
