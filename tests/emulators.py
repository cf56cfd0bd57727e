"""Start the real Pub/Sub, BigQuery, Bigtable and Cloud Storage emulators on free ports,
and stop them.

Used by the test fixtures and by the local streaming demo. Each emulator runs in
its own process group so stopping it also stops the JVM or server it spawns.
Clients find them through `PUBSUB_EMULATOR_HOST` and `BIGTABLE_EMULATOR_HOST`
(host:port, no scheme), `BIGQUERY_EMULATOR_HOST` and `STORAGE_EMULATOR_HOST`
(with scheme), which `Emulators.env()` returns. Cloud Storage is
`gcp-storage-emulator` (PyPI, in memory): the storage client, and through it
Beam's `gs://` filesystem, honour `STORAGE_EMULATOR_HOST`. Rejected: the PyPI
wheel bundling fake-gcs-server, a Go binary for x86-64 Linux only from a
one-release wrapper, where the Python emulator runs wherever the tests do.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

PUBSUB_EMULATOR = Path(
    os.environ.get(
        "PUBSUB_EMULATOR_BIN",
        "/usr/lib/google-cloud-sdk/platform/pubsub-emulator/bin/cloud-pubsub-emulator",
    )
)
BIGTABLE_EMULATOR = Path(
    os.environ.get(
        "BIGTABLE_EMULATOR_BIN",
        "/usr/lib/google-cloud-sdk/platform/bigtable-emulator/cbtemulator",
    )
)
STARTUP_SECONDS = 90.0


class EmulatorError(RuntimeError):
    """An emulator could not be started; the message says how to install it."""


def free_port() -> int:
    """A TCP port free right now on 127.0.0.1 (the emulator binds it next)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def _process(name: str, argv: list[str], ready: Callable[[], bool]) -> Iterator[None]:
    """Run `argv` until the context exits, once `ready()` says it serves."""
    with tempfile.TemporaryFile(prefix=f"{name}-") as log:
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + STARTUP_SECONDS
            while not ready():
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    tail = log.read().decode(errors="replace")[-2000:]
                    raise EmulatorError(f"{name} did not start ({argv[0]}):\n{tail}")
                time.sleep(0.3)
            yield
        finally:
            _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@contextmanager
def pubsub_emulator() -> Iterator[str]:
    """The Pub/Sub emulator; yields its `PUBSUB_EMULATOR_HOST` value."""
    if not PUBSUB_EMULATOR.exists():
        raise EmulatorError(
            f"{PUBSUB_EMULATOR} is missing: install the Debian package "
            "google-cloud-cli-pubsub-emulator (or set PUBSUB_EMULATOR_BIN)"
        )
    port = free_port()
    argv = [str(PUBSUB_EMULATOR), "--host=127.0.0.1", f"--port={port}"]
    with _process("pubsub-emulator", argv, lambda: _http_ok(f"http://127.0.0.1:{port}/")):
        yield f"127.0.0.1:{port}"


def _script(name: str) -> str:
    """A console script of the `emulators` extra, beside this Python or on the PATH."""
    beside_python = Path(sys.executable).with_name(name)
    found = str(beside_python) if beside_python.exists() else shutil.which(name)
    if not found:
        raise EmulatorError(f"{name} is missing: pip install -e '.[emulators]'")
    return found


@contextmanager
def bigquery_emulator(project: str) -> Iterator[str]:
    """The BigQuery emulator (bqemulator, in memory); yields `BIGQUERY_EMULATOR_HOST`."""
    rest, grpc = free_port(), free_port()
    argv = [
        _script("bqemulator"),
        "start",
        "--rest-host",
        "127.0.0.1",
        "--rest-port",
        str(rest),
        "--grpc-port",
        str(grpc),
        "--ephemeral",
        "--project",
        project,
    ]
    host = f"http://127.0.0.1:{rest}"
    ready = f"{host}/bigquery/v2/projects/{project}/datasets"
    with _process("bigquery-emulator", argv, lambda: _http_ok(ready)):
        yield host


@contextmanager
def bigtable_emulator() -> Iterator[str]:
    """The Bigtable emulator (cbtemulator, in memory); yields `BIGTABLE_EMULATOR_HOST`."""
    if not BIGTABLE_EMULATOR.exists():
        raise EmulatorError(
            f"{BIGTABLE_EMULATOR} is missing: install the Debian package "
            "google-cloud-cli-bigtable-emulator (or set BIGTABLE_EMULATOR_BIN)"
        )
    port = free_port()
    argv = [str(BIGTABLE_EMULATOR), "-host", "127.0.0.1", "-port", str(port)]
    with _process("bigtable-emulator", argv, lambda: _listening(port)):
        yield f"127.0.0.1:{port}"


@contextmanager
def storage_emulator() -> Iterator[str]:
    """The Cloud Storage emulator (gcp-storage-emulator, in memory); yields
    `STORAGE_EMULATOR_HOST`."""
    port = free_port()
    argv = [
        _script("gcp-storage-emulator"),
        "start",
        "--host=127.0.0.1",
        f"--port={port}",
        "--in-memory",
        "--quiet",
    ]
    host = f"http://127.0.0.1:{port}"
    with _process("storage-emulator", argv, lambda: _http_ok(f"{host}/storage/v1/b")):
        yield host


@dataclass(frozen=True)
class Emulators:
    """Where the running emulators listen, for one GCP project id."""

    project: str
    pubsub_host: str
    bigquery_host: str
    bigtable_host: str
    storage_host: str

    def env(self) -> dict[str, str]:
        """The environment variables the Google clients read to find the emulators."""
        return {
            "PUBSUB_EMULATOR_HOST": self.pubsub_host,
            "BIGQUERY_EMULATOR_HOST": self.bigquery_host,
            "BIGTABLE_EMULATOR_HOST": self.bigtable_host,
            "STORAGE_EMULATOR_HOST": self.storage_host,
            "GOOGLE_CLOUD_PROJECT": self.project,
        }


@contextmanager
def emulators(project: str) -> Iterator[Emulators]:
    """All four emulators, started side by side and stopped on exit."""
    with ExitStack() as stack:
        pubsub = stack.enter_context(pubsub_emulator())
        bigquery = stack.enter_context(bigquery_emulator(project))
        bigtable = stack.enter_context(bigtable_emulator())
        storage = stack.enter_context(storage_emulator())
        yield Emulators(project, pubsub, bigquery, bigtable, storage)
