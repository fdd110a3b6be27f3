"""A loopback TCP relay that the test broker's `stickyd.url` points at, so that one broker can see
stickyd answering, gone, or black-holed: `forward(url)` relays every connection to a stickyd service,
`reset()` accepts and closes each connection at once (a stopped service), `black_hole()` accepts and
reads but never answers (a hung service or a dropped network path). Switching closes every open
connection, so a client's pooled connection cannot outlive the mode it was opened in."""

from __future__ import annotations

import socket
import struct
import threading
from contextlib import suppress
from typing import Literal
from urllib.parse import urlparse

Mode = Literal["forward", "reset", "black_hole"]


class Switchboard:
    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port: int = self._listener.getsockname()[1]
        self._mode: Mode = "reset"
        self._upstream: tuple[str, int] | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._acceptor = threading.Thread(target=self._accept_loop, name="switchboard", daemon=True)
        self._acceptor.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def mode(self) -> Mode:
        return self._mode

    def forward(self, url: str) -> None:
        parsed = urlparse(url)
        self._switch("forward", (parsed.hostname or "127.0.0.1", parsed.port or 80))

    def reset(self) -> None:
        self._switch("reset", None)

    def black_hole(self) -> None:
        self._switch("black_hole", None)

    def close(self) -> None:
        self._closed.set()
        self._switch("reset", None)
        self._acceptor.join(timeout=5)
        self._listener.close()

    def _switch(self, mode: Mode, upstream: tuple[str, int] | None) -> None:
        with self._lock:
            self._mode, self._upstream = mode, upstream
            doomed, self._open = self._open, set()
        for sock in doomed:
            _abort(sock)

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                mode, upstream = self._mode, self._upstream
                self._open.add(client)
            if mode == "reset":
                self._forget(client)
                _abort(client)
            elif mode == "black_hole":
                threading.Thread(target=self._swallow, args=(client,), daemon=True).start()
            else:
                assert upstream is not None
                threading.Thread(target=self._relay, args=(client, upstream), daemon=True).start()

    def _swallow(self, client: socket.socket) -> None:
        with suppress(OSError):
            while client.recv(65536):
                pass
        self._forget(client)

    def _relay(self, client: socket.socket, upstream: tuple[str, int]) -> None:
        try:
            server = socket.create_connection(upstream, timeout=5)
        except OSError:
            self._forget(client)
            _abort(client)
            return
        server.settimeout(None)
        with self._lock:
            self._open.add(server)
        back = threading.Thread(target=_pump, args=(server, client), daemon=True)
        back.start()
        _pump(client, server)
        back.join()
        self._forget(client)
        self._forget(server)

    def _forget(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.discard(sock)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    _abort(sink)
    _abort(source)


def _abort(sock: socket.socket) -> None:
    """Close with an RST (SO_LINGER 0), as a crashed or stopped peer looks to the client."""
    with suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with suppress(OSError):
        sock.close()
