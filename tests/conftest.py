"""Shared fixtures: the real emulators, started once per test session on free ports; and
the guard that fails a test reading anything beside the checkout (tests/outside_reads.py).

Hypothesis profiles for every property and fuzz target: `ci` (default, 1,000
examples per target), `thorough` (10,000), `dev` (100); choose with
HYPOTHESIS_PROFILE.
"""

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

# Never ask a cloud metadata server from a test: without credentials, google-auth
# probes the GCE metadata address before giving up (Beam's gs:// filesystem and the
# credential checks of the commands do). Read when google-auth is first imported, so
# set before anything imports it; `make test` sets it for the whole run as well.
os.environ.setdefault("NO_GCE_CHECK", "true")

import pytest
from hypothesis import HealthCheck, settings

from tests.batch_run import SAMPLES
from tests.emulators import Emulators, emulators
from tests.fault_proxy import FaultProxy, fault_proxy
from tests.fault_runs import port
from tests.outside_reads import install

if TYPE_CHECKING:
    from google.cloud import storage

_COMMON = {"deadline": None, "suppress_health_check": list(HealthCheck), "derandomize": True}
settings.register_profile("ci", max_examples=1000, **_COMMON)
settings.register_profile("thorough", max_examples=10_000, **_COMMON)
settings.register_profile("dev", max_examples=100, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

EMULATOR_PROJECT = "evpack-test"


def pytest_configure(config: pytest.Config) -> None:
    install(config, Path(__file__).resolve().parents[1])


@pytest.fixture(scope="session")
def gcp_emulators() -> Iterator[Emulators]:
    """The emulators, with the environment pointing every Google client at them."""
    with emulators(EMULATOR_PROJECT) as running:
        saved = {name: os.environ.get(name) for name in running.env()}
        os.environ.update(running.env())
        try:
            yield running
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


@pytest.fixture()
def gcs(gcp_emulators: Emulators) -> Iterator[tuple[FaultProxy, "storage.Client"]]:
    """The storage emulator behind a fault proxy, with the sample inputs in `gs://faults/in/`.

    The storage client is imported here, not at the top: most tests never touch it.
    """
    from google.cloud import storage

    client = storage.Client(project=gcp_emulators.project)
    if client.lookup_bucket("faults") is None:
        client.create_bucket("faults")
    for name in ("requests", "catalog"):
        blob = client.bucket("faults").blob(f"in/{name}.jsonl")
        blob.upload_from_filename(str(SAMPLES / f"{name}.jsonl"))
    with fault_proxy(port(gcp_emulators.storage_host)) as proxy:
        yield proxy, client
