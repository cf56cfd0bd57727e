"""ARCHITECTURE.md names every module of the layers, and only modules that exist."""

import importlib
import re
from pathlib import Path

import pytest

from tests.imports import PACKAGES, imported_modules, package_sources

ROOT = Path(__file__).resolve().parents[1]
LAYERS = PACKAGES
PAGE = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")


def modules(layer: str) -> set[str]:
    return {p.stem for p in (ROOT / layer).glob("*.py") if not p.stem.startswith("_")}


@pytest.mark.parametrize("layer", LAYERS)
def test_every_module_is_placed_on_the_page(layer: str) -> None:
    """Each module appears as `layer.name`, `layer/name.py`, or under its layer's list."""
    section = PAGE.split(f"**`{layer}/`**", 1)[1].split("\n\n", 1)[0] if layer != "schemas" else ""
    named = set(re.findall(rf"`{layer}[./](\w+)", PAGE)) | set(re.findall(r"`(\w+)\.py`", section))
    assert modules(layer) <= named, sorted(modules(layer) - named)


def subpackages() -> list[Path]:
    """Every folder of a layer that is a package of its own (`packer/verification/`, ...)."""
    return sorted(
        path.parent.relative_to(ROOT)
        for layer in LAYERS
        for path in (ROOT / layer).glob("*/__init__.py")
    )


def room_text(folder: str) -> str:
    """What the page says under a folder: its own section (`**`folder/`**` up to a blank
    line), or the list item that names it (up to the next item)."""
    found = ""
    for match in re.finditer(rf"(\*\*)?`{re.escape(folder)}/`", PAGE):
        rest = PAGE[match.end() :]
        end = rest.find("\n\n") if match[1] else min(rest.find("\n- ") % 10**9, rest.find("\n\n"))
        found += rest[:end]
    return found


@pytest.mark.parametrize("folder", [p.as_posix() for p in subpackages()])
def test_every_module_of_a_room_is_placed_on_the_page(folder: str) -> None:
    """A module of a subpackage appears as `folder/name.py`, `folder.name` (dotted), or by
    its file name where the page describes the folder."""
    dotted = folder.replace("/", ".")
    named = set(re.findall(rf"`(?:{re.escape(folder)}/|{re.escape(dotted)}\.)(\w+)", PAGE))
    named |= set(re.findall(r"`(\w+)\.py`", room_text(folder)))
    modules = {p.stem for p in (ROOT / folder).glob("*.py") if not p.stem.startswith("_")}
    assert modules <= named, sorted(modules - named)


def test_every_named_module_exists() -> None:
    """A `layer.name` is a module, a directory of the layer, or a name the package exports."""
    for layer, name in re.findall(rf"`({'|'.join(LAYERS)})[./](\w+)", PAGE):
        exists = (ROOT / layer / f"{name}.py").exists() or (ROOT / layer / name).exists()
        assert exists or hasattr(importlib.import_module(layer), name), f"{layer}.{name}"


def imported_layers(path: Path) -> set[tuple[str, int]]:
    """The project layers a module imports, with the line of each import (lazy ones too)."""
    return {
        (name.split(".")[0], line)
        for name, line in imported_modules(path)
        if name.split(".")[0] in LAYERS
    }


def upward_imports(root: Path) -> list[str]:
    """Every import under `root` that points up the layer list (schemas < ... < pipelines)."""
    found = []
    for rank, layer in enumerate(LAYERS):
        for path in package_sources(root, layer):
            for target, line in sorted(imported_layers(path)):
                if LAYERS.index(target) > rank:
                    found.append(f"{path.relative_to(root)}:{line} imports {target}")
    return found


def test_imports_only_point_down_the_layers() -> None:
    """The rule ARCHITECTURE.md states: an import only points down schemas, packer,
    transforms, pipelines (a pure `packer/` never reaches Beam through `transforms/`)."""
    assert upward_imports(ROOT) == []


def test_the_layer_check_fails_on_an_upward_import(tmp_path: Path) -> None:
    for layer in LAYERS:
        (tmp_path / layer).mkdir()
    (tmp_path / "packer" / "bad.py").write_text("import os\nfrom transforms.pack import X\n")
    (tmp_path / "pipelines" / "fine.py").write_text("from packer import pack_request\n")
    assert upward_imports(tmp_path) == ["packer/bad.py:2 imports transforms"]


def test_packer_imports_no_beam() -> None:
    """Pure decision logic: no module of `packer/` or `schemas/` imports Apache Beam."""
    for layer in ("schemas", "packer"):
        for path in sorted((ROOT / layer).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            assert not re.search(r"^\s*(import|from) apache_beam", text, re.M), path
