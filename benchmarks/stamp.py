"""The stamp every result file carries: date, machine, versions, commit."""

import os
import platform
import subprocess
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

PACKAGES = (
    "evidence-packer",
    "apache-beam",
    "tiktoken",
    "pydantic",
    "llama-index-core",
    "haystack-ai",
    "bm25s",
    "matplotlib",
)


def cpu_model() -> str:
    """The CPU model name as the kernel reports it."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def machine() -> dict:
    """Date, machine and versions that the figures depend on."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = "not installed"
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    # Uncommitted changes to the packed code make the commit alone a wrong name.
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "packer", "schemas", "pipelines", "transforms"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if commit and dirty:
        commit += " with uncommitted changes to the job's code"
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cores": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cpu": cpu_model(),
        "python": platform.python_version(),
        "commit": commit or "unknown",
        "versions": versions,
    }


def stamp(machine: dict) -> str:
    """A result file's stamp as the report's sentence."""
    versions = ", ".join(f"{k} {v}" for k, v in machine["versions"].items())
    load = machine.get("load_average")
    busy = f" (load average {', '.join(map(str, load))} when it started)" if load else ""
    return (
        f"Measured {machine['date']} on {machine['cores']} cores ({machine['cpu']}){busy}, "
        f"Python {machine['python']}, commit {machine['commit']}; {versions}."
    )
