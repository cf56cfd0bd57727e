"""ARCHITECTURE.md names every module of the layers, and only modules that exist."""

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("schemas", "packer", "transforms", "pipelines")
PAGE = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")


def modules(layer: str) -> set[str]:
    return {p.stem for p in (ROOT / layer).glob("*.py") if not p.stem.startswith("_")}


@pytest.mark.parametrize("layer", LAYERS)
def test_every_module_is_placed_on_the_page(layer: str) -> None:
    """Each module appears as `layer.name`, `layer/name.py`, or under its layer's list."""
    section = PAGE.split(f"**`{layer}/`**", 1)[1].split("\n\n", 1)[0] if layer != "schemas" else ""
    named = set(re.findall(rf"`{layer}[./](\w+)", PAGE)) | set(re.findall(r"`(\w+)\.py`", section))
    assert modules(layer) <= named, sorted(modules(layer) - named)


def test_every_named_module_exists() -> None:
    """A `layer.name` is a module, a directory of the layer, or a name the package exports."""
    for layer, name in re.findall(rf"`({'|'.join(LAYERS)})[./](\w+)", PAGE):
        exists = (ROOT / layer / f"{name}.py").exists() or (ROOT / layer / name).exists()
        assert exists or hasattr(importlib.import_module(layer), name), f"{layer}.{name}"
