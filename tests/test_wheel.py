"""The built wheel works outside the checkout: `evpack batch` on samples/, then `evpack report`.

An editable install reads files from the source tree, so a command that needs a
file the wheel lacks (the dashboard views, the request schema) passes every other
test and fails once installed. Here the wheel is built from what deploy/Dockerfile
copies (so the image's `pip install .` gets every module too), installed into a
new venv, and run from a directory outside the checkout.

The new venv borrows the dependencies of the test venv through a `.pth` line
(`--no-deps` install of the wheel alone), which takes seconds. Rejected: a venv
resolving every dependency again (measured 91 s with a warm pip cache on two
shared cores, for each test run), and `--system-site-packages` (it exposes the
base interpreter's packages, not the test venv's). The `.pth` line only adds a
path, so the test venv's own editable-install hook does not run and `pipelines`
imports from the wheel.
"""

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from pipelines.report import PANELS
from tests.imports import PACKAGES, imported_modules, package_sources

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.wheel


IMAGE_COMMIT = "ab" * 20
"""The commit the image build passes (`EVPACK_COMMIT`): its sources come without `.git`."""


def run(args: list[str | Path], cwd: Path, **extra_env: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(extra_env)
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done.stdout


PIP = (sys.executable, "-m", "pip", "--quiet", "--disable-pip-version-check")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from the files deploy/Dockerfile copies, and only those.

    Built with build isolation: the build backend is the one pyproject.toml asks
    for, not whatever setuptools the test venv happens to hold.
    """
    base = tmp_path_factory.mktemp("image")
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    for line in re.findall(r"^COPY (?!--from)(.+)$", dockerfile, flags=re.M):
        *sources, dest = line.split()
        for src in sources:
            target = base / "context" / (src if dest == "./" else dest)
            if (ROOT / src).is_dir():
                shutil.copytree(
                    ROOT / src, target, ignore=shutil.ignore_patterns("__pycache__", "*.so")
                )
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(ROOT / src, target)
    build = [*PIP, "wheel", "--no-deps", "-w", base / "dist", base / "context"]
    run(build, cwd=base, EVPACK_COMMIT=IMAGE_COMMIT)
    (built,) = (base / "dist").glob("evidence_packer-*.whl")
    return built


def test_the_image_sources_alone_build_the_package(wheel: Path) -> None:
    """Every module and every file read at run time is in the wheel."""
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in ("schemas", "packer", "transforms", "pipelines"):
        for module in (ROOT / package).glob("*.py"):
            assert f"{package}/{module.name}" in names
    for view in (ROOT / "pipelines" / "dashboard_views").glob("*.sql"):
        assert f"pipelines/dashboard_views/{view.name}" in names
    assert "schemas/request.schema.json" in names
    for kernels in ("_native", "_pretokenize"):
        assert any(re.fullmatch(rf"packer/{kernels}\..*\.so", n) for n in names), kernels


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin/ directory of a new venv holding only the wheel (dependencies borrowed)."""
    base = tmp_path_factory.mktemp("wheel")
    venv = base / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=base)
    python = venv / "bin" / "python"
    purelib = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], base)
    Path(purelib.strip(), "test_venv_dependencies.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8"
    )
    run([*PIP, "--python", python, "install", "--no-deps", wheel], cwd=base)
    return venv / "bin"


def test_the_installed_package_names_the_commit_it_was_built_from(
    wheel: Path, installed: Path, tmp_path: Path
) -> None:
    with zipfile.ZipFile(wheel) as built:
        assert json.loads(built.read("packer/_stamp.json")) == {"commit": IMAGE_COMMIT}
    printed = run([installed / "evpack", "--version"], tmp_path).strip()
    assert printed.startswith("evpack ") and printed.endswith(f"+{IMAGE_COMMIT[:12]}"), printed


def test_packages_import_from_the_wheel_not_the_checkout(installed: Path, tmp_path: Path) -> None:
    where = run(
        [installed / "python", "-c", "import pipelines; print(pipelines.__file__)"], tmp_path
    )
    assert Path(where.strip()).is_relative_to(installed.parent), where
    assert not Path(where.strip()).is_relative_to(ROOT), where


def test_batch_then_report_run_outside_the_checkout(installed: Path, tmp_path: Path) -> None:
    samples = ROOT / "samples"
    run(
        [
            installed / "evpack",
            "batch",
            f"--input={samples / 'requests.jsonl'}",
            f"--catalog={samples / 'catalog.jsonl'}",
            f"--config={samples / 'config.yaml'}",
            "--output=run",
        ],
        cwd=tmp_path,
    )
    assert list((tmp_path / "run").glob("manifests/*.parquet")), sorted(tmp_path.rglob("*"))
    run([installed / "evpack", "report", "--audit=run", "--out=report"], cwd=tmp_path)
    page = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    views = sorted(p.stem for p in (ROOT / "pipelines" / "dashboard_views").glob("*.sql"))
    assert views
    for view in views:  # every view of the source tree ran from the installed package
        if view not in PANELS:  # those feed the run's panels (a missing one fails the run)
            assert f"<section class=panel id='{view}' data-empty=" in page, view
    assert (tmp_path / "report" / "distributions.png").is_file()
    run([installed / "evpack", "schema", "--check"], cwd=tmp_path)


def _third_party_imports() -> dict[str, str]:
    """Top-level modules the packaged code imports (lazily too), mapped to a file using each."""
    found: dict[str, str] = {}
    for package in PACKAGES:
        for path in package_sources(ROOT, package):  # subpackages too
            for name, _ in imported_modules(path):
                top = name.split(".")[0]
                if top not in PACKAGES and top not in sys.stdlib_module_names:
                    found.setdefault(name if top == "google" else top, str(path))
    return found


def test_every_imported_distribution_is_a_declared_dependency(wheel: Path) -> None:
    """The wheel's venv borrows the test venv's packages: this catches what that would hide."""
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        lines = archive.read(metadata).decode("utf-8").splitlines()
    requires = {
        re.split(r"[\s\[<>=!;~(]", line.removeprefix("Requires-Dist: "), maxsplit=1)[0]
        for line in lines
        if line.startswith("Requires-Dist: ")
        and ("extra ==" not in line or 'extra == "report"' in line)  # the report's own
    }
    declared = {name.lower().replace("_", "-") for name in requires}
    # What the declared distributions bring along (apache-beam[gcp] brings the GCP clients).
    provided = {name.lower().replace("_", "-") for name in _requirements_closure(declared)}
    by_module = importlib.metadata.packages_distributions()
    missing = {}
    for module, where in _third_party_imports().items():
        top = module.split(".")[0]
        dists = by_module.get(top, [])
        if top == "google":  # a namespace: find the distribution of the subpackage
            dists = [d for d in dists if _provides(d, module)]
        if not {d.lower().replace("_", "-") for d in dists} & provided:
            missing[module] = (where, dists)
    assert missing == {}


def _provides(distribution: str, module: str) -> bool:
    """Whether the distribution holds the package of `module` (`google.<x>`, `google.cloud.<x>`)."""
    parts = module.split(".")
    package = "/".join(parts[:3] if parts[1:2] == ["cloud"] else parts[:2])
    files = importlib.metadata.distribution(distribution).files or []
    return any(str(f).startswith((package + "/", package + ".py")) for f in files)


def _requirements_closure(names: set[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for req in requires:
            if "extra ==" in req and not any(f'extra == "{x}"' in req for x in ("gcp",)):
                continue
            todo.append(re.split(r"[\s\[<>=!;~(]", req, maxsplit=1)[0].lower().replace("_", "-"))
    return seen
