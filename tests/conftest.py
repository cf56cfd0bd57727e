"""Shared fixtures: the real emulators, started once per test session on free ports."""

import os
from collections.abc import Iterator

import pytest

from tests.emulators import Emulators, emulators

EMULATOR_PROJECT = "evpack-test"


@pytest.fixture(scope="session")
def gcp_emulators() -> Iterator[Emulators]:
    """Both emulators, with the environment pointing every Google client at them."""
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
