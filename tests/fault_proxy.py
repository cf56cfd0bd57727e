"""A loopback TCP proxy in front of one emulator that breaks the link on demand.

The fault tests point a client at `FaultProxy.host` instead of the emulator and
switch the proxy between passing bytes and one of the faults a sink shows in
production:

- `kill`: every new connection is reset on accept (a server that died mid-call);
- `hang`: connections are accepted and read, and never answered (a server or
  load balancer that stopped responding);
- `503`: every HTTP request is answered `503 Service Unavailable` (an overloaded
  front end; HTTP sinks only);
- `refuse`: the listening socket is closed, so connecting is refused (nothing
  listens there any more);
- `mute`: requests still reach the server, its answers are dropped (a call the
  server carried out whose answer was lost on the way back). Open connections
  are kept, so a client's next call on its kept-alive connection is carried
  out and never answered.

Setting any other fault resets the connections open at that moment, so a client
holding a kept-alive connection meets the fault on its next call. `set_on` arms a
fault for the first request whose bytes hold a marker (a path that only one phase
of a run calls, e.g. BigQuery's `/jobs` in the table commit): that request is
dropped and its connection reset, and the client's retry meets the fault, so a
test breaks a phase as it starts without timing it from outside.

`enforce_create_if_absent` is a test-side shim, not a fault: the Cloud Storage
emulator ignores generation preconditions, so the proxy answers them itself.

Bounded in time and count: each fault applies to at most `count` connections
(then the proxy passes again), every thread is a daemon, sockets carry timeouts,
and `close()` ends all of it. It only ever connects to 127.0.0.1. Rejected:
toxiproxy (a Go server to install and drive over HTTP) and stopping the emulator
itself (slow to restart, and it cannot hang or answer 503).
"""

import socket
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from functools import partial
from typing import Literal

Fault = Literal["pass", "kill", "hang", "503", "refuse", "mute"]
LOOPBACK = "127.0.0.1"
_CHUNK = 65536
_IDLE_SECONDS = 300.0
"""The longest a proxied connection may sit idle before the proxy drops it."""
_CREATE_IF_ABSENT = b"ifGenerationMatch=0"
_PRECONDITION_FAILED = (
    b"HTTP/1.1 412 Precondition Failed\r\nContent-Type: application/json\r\n"
    b'Content-Length: 65\r\nConnection: close\r\n\r\n{"error": {"code": 412, "message": '
    b'"fault proxy: object exists"}}'
)
_UNAVAILABLE = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b'Content-Length: 63\r\nConnection: close\r\n\r\n{"error": {"code": 503, "message": '
    b'"fault proxy: unavailable"}}'
)


def _reset(sock: socket.socket) -> None:
    """Close `sock` with a TCP reset (SO_LINGER 0), as a dying server's kernel does."""
    with suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class FaultProxy:
    """Proxies 127.0.0.1:`port` to 127.0.0.1:`target`; see the module docstring."""

    def __init__(self, target: int) -> None:
        self._target = target
        self._lock = threading.Lock()
        self._fault: Fault = "pass"
        self._left: int | None = None
        self._open: set[socket.socket] = set()
        self._hung: list[socket.socket] = []
        self._armed: tuple[bytes, Fault] | None = None
        self._created: bool | None = None
        self._closed = False
        self.faults = 0
        """How many connections the proxy broke so far."""
        self.tripped = False
        """Whether the fault armed by `set_on` was set."""
        self._listener = self._listen(0)
        self.port = self._listener.getsockname()[1]
        self._serve()

    @property
    def host(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def set(self, fault: Fault, count: int | None = None) -> None:
        """Break the next `count` connections (None: all, until set again) with `fault`."""
        with self._lock:
            self._fault, self._left = fault, count
            live = list(self._open) if fault not in ("pass", "mute") else []  # reconnect into it
            self._open -= set(live)
        for sock in live:
            # shut down first: a thread of this proxy blocked reading `sock` keeps it open
            # through `close()`, so the server was never told, and a single-threaded one
            # (the Cloud Storage emulator) waited for the rest of a request cut mid-way,
            # deaf to every other client, until the proxy's idle timeout
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            _reset(sock)
        if fault == "refuse":
            self._listener.close()
        elif self._listener.fileno() == -1:
            self._listener = self._listen(self.port)
            self._serve()

    def set_on(self, marker: bytes, fault: Fault) -> None:
        """`set(fault)` once a client sends a request holding `marker` (that one dropped)."""
        with self._lock:
            self._armed = (marker, fault)

    def enforce_create_if_absent(self) -> None:
        """Answer create-if-absent uploads (`ifGenerationMatch=0`) as Cloud Storage does,
        for an emulator that ignores the precondition: the first passes, every later one
        is refused 412 Precondition Failed. A shim for a test that creates one such object
        through the proxy (two runs racing for one lock), not a general emulation."""
        with self._lock:
            self._created = False

    def _second_create(self, data: bytes) -> bool:
        """Whether `data` is a create-if-absent upload after the first (see above)."""
        with self._lock:
            if self._created is None or _CREATE_IF_ABSENT not in data:
                return False
            second, self._created = self._created, True
            return second

    def _upstream(self, client: socket.socket, data: bytes) -> bool:
        """Whether `data`, on its way to the server, is dropped (answered here instead)."""
        if self._second_create(data):
            with suppress(OSError):
                client.sendall(_PRECONDITION_FAILED)
            _reset(client)
            return True
        return self._tripped(data)

    def _tripped(self, data: bytes) -> bool:
        """Whether `data`, on its way to the server, trips the armed fault (then dropped)."""
        with self._lock:
            armed, self._armed = self._armed, None
            if armed is None or armed[0] not in data:
                self._armed = armed
                return False
        self.set(armed[1])
        self.tripped = True
        return True

    def close(self) -> None:
        with self._lock:
            self._closed = True
            socks = [*self._open, *self._hung]
        self._listener.close()
        for sock in socks:
            _reset(sock)

    def _listen(self, port: int) -> socket.socket:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((LOOPBACK, port))
        listener.listen(64)
        return listener

    def _serve(self) -> None:
        threading.Thread(target=self._accept, args=(self._listener,), daemon=True).start()

    def _take(self) -> Fault:
        """The fault for a new connection, counted down."""
        with self._lock:
            fault = self._fault
            if fault != "pass" and self._left is not None:
                self._left -= 1
                if self._left <= 0:
                    self._fault, self._left = "pass", None
            if fault != "pass":
                self.faults += 1
            return fault

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed: `refuse`, or the proxy is done
            fault = self._take()
            target = {"kill": self._kill, "hang": self._hang, "503": self._unavailable}
            threading.Thread(
                target=target.get(fault, self._pipe), args=(client,), daemon=True
            ).start()

    def _kill(self, client: socket.socket) -> None:
        _reset(client)

    def _hang(self, client: socket.socket) -> None:
        with self._lock:
            self._hung.append(client)
        client.settimeout(_IDLE_SECONDS)
        for _ in _received(client):
            pass  # read and never answer

    def _unavailable(self, client: socket.socket) -> None:
        client.settimeout(10)
        seen = b""
        for data in _received(client):
            seen += data
            if b"\r\n\r\n" in seen:
                break
        with suppress(OSError):
            client.sendall(_UNAVAILABLE)
        client.close()

    def _pipe(self, client: socket.socket) -> None:
        try:
            server = socket.create_connection((LOOPBACK, self._target), timeout=10)
        except OSError:
            _reset(client)
            return
        for sock in (client, server):
            sock.settimeout(_IDLE_SECONDS)
        with self._lock:
            if self._closed:
                _reset(client)
                server.close()
                return
            self._open |= {client, server}
        threading.Thread(target=_copy, args=(server, client, self._muted), daemon=True).start()
        _copy(client, server, partial(self._upstream, client))

    def _muted(self, _: bytes) -> bool:
        return self._fault == "mute"


def _received(sock: socket.socket) -> Iterator[bytes]:
    while True:
        try:
            data = sock.recv(_CHUNK)
        except OSError:
            return
        if not data:
            return
        yield data


def _copy(source: socket.socket, sink: socket.socket, drop: Callable[[bytes], bool]) -> None:
    """Pass what `source` sends on to `sink`, but for what `drop` says (read and lost)."""
    for data in _received(source):
        if drop(data):
            continue
        try:
            sink.sendall(data)
        except OSError:
            break
    for sock in (source, sink):
        with suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


@contextmanager
def fault_proxy(target: int) -> Iterator[FaultProxy]:
    """A `FaultProxy` in front of 127.0.0.1:`target`, closed on exit."""
    proxy = FaultProxy(target)
    try:
        yield proxy
    finally:
        proxy.close()
