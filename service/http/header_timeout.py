"""Close connections whose request headers never complete (header slow-loris).

uvicorn reads request headers without a time limit: a client that opens a connection and sends
part of a request line, or headers one byte a minute, holds the connection (and a file
descriptor) for as long as it likes. This wraps uvicorn's HTTP protocol class so that a connection
whose first request has not completed its headers STICKYD_HEADER_TIMEOUT_S after it was opened is
closed (one DEBUG line). Once headers are complete, the body deadline (STICKYD_BODY_TIMEOUT_S, 408)
and uvicorn's keep-alive timeout take over. The same class sends each small response in one write
(service/http/single_write.py).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from typing import Any

from uvicorn.config import HTTP_PROTOCOLS

from stickyd.service.http.single_write import CoalescingTransport

log = logging.getLogger("stickyd.access")


def _protocol_class(name: str) -> type[asyncio.Protocol]:
    module, _, attribute = HTTP_PROTOCOLS[name].partition(":")
    protocol: type[asyncio.Protocol] = getattr(importlib.import_module(module), attribute)
    return protocol


def _auto() -> str:
    """What uvicorn's `auto` picks: httptools when it is installed, else h11."""
    try:
        importlib.import_module("httptools")
    except ImportError:
        return "h11"
    return "httptools"


def header_timeout_protocol(timeout_s: float, http: str = "auto") -> type[asyncio.Protocol]:
    """uvicorn's `http` protocol (by its uvicorn name) with a header deadline per connection.

    Both of uvicorn's HTTP/1.1 protocols set `self.cycle` when a request's headers are complete,
    which is what the deadline checks."""
    base: Any = _protocol_class(_auto() if http == "auto" else http)

    class HeaderDeadlineProtocol(base):  # type: ignore[misc, valid-type]
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            # a small response leaves in one write (service/http/single_write.py)
            super().connection_made(CoalescingTransport(transport, self.loop))
            self._header_deadline = self.loop.call_later(timeout_s, self._headers_overdue)

        def connection_lost(self, exc: Exception | None) -> None:
            self._header_deadline.cancel()
            super().connection_lost(exc)

        def _headers_overdue(self) -> None:
            if self.cycle is None and not self.transport.is_closing():
                log.debug("closed a connection whose request headers were not complete after %g s", timeout_s)
                self.transport.close()

    return HeaderDeadlineProtocol
