"""A response in one write: uvicorn writes a response's status line and headers, then its body, as
two writes to the socket; with TCP_NODELAY (uvloop sets it) that is two send() calls and two TCP
segments, and the client wakes up for each. CoalescingTransport holds the small writes made during
one step of the event loop and sends them together at the end of it (one call_soon), so a small
answer leaves in one segment. A large write is not copied: what is held goes out first, then the
large one as it is. Closing or aborting the connection sends (or drops) what is held first.
"""

from __future__ import annotations

import asyncio
from typing import Any

SMALL_WRITE_BYTES = 64 * 1024
"""Writes up to this size are held until the end of the step and joined; larger ones go at once."""


class CoalescingTransport:
    """Wraps one connection's transport; everything but writing and closing is the transport's."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []
        self._flush_soon: asyncio.Handle | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if len(data) > SMALL_WRITE_BYTES:
            self.flush()
            self._transport.write(data)
            return
        if data:
            self._held.append(bytes(data))
            if self._flush_soon is None:
                self._flush_soon = self._loop.call_soon(self.flush)

    def writelines(self, chunks: Any) -> None:
        for chunk in chunks:
            self.write(chunk)

    def flush(self) -> None:
        """Send what is held, as one write."""
        if self._flush_soon is not None:
            self._flush_soon.cancel()
            self._flush_soon = None
        if not self._held:
            return
        data = self._held[0] if len(self._held) == 1 else b"".join(self._held)
        self._held.clear()
        if not self._transport.is_closing():
            self._transport.write(data)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(len(chunk) for chunk in self._held)

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._held.clear()
        if self._flush_soon is not None:
            self._flush_soon.cancel()
            self._flush_soon = None
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
