"""Reading a request body as a hostile client may send it: the wrong media type (415), too many
bytes (413), too slowly (408), or not at all (the client went away: one INFO line, no answer).

Runs on the event loop and only moves bytes; parsing happens in a solver process
(service/http/json_guard.py).
"""

from __future__ import annotations

import asyncio
import logging

from starlette.requests import ClientDisconnect, Request

from stickyd.models.consumer.compact import MAGIC, is_compact
from stickyd.models.consumer.compact import MEDIA_TYPE as COMPACT_MEDIA_TYPE
from stickyd.service.processes.job import JobResult, error

log = logging.getLogger("stickyd.access")

JSON_MEDIA_TYPE = "application/json"


class ClientGone(Exception):
    """The client closed the connection before its body was complete."""


def declared_media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def media_type_error(request: Request, kind: str = "consumer") -> JobResult | None:
    """415 unless the body is declared `application/json`, or (consumer requests) the compact
    encoding (a browser form or `text/plain` post cannot make the service spend its CPU)."""
    media_type = declared_media_type(request)
    if media_type == JSON_MEDIA_TYPE or (media_type == COMPACT_MEDIA_TYPE and kind == "consumer"):
        return None
    shown = media_type or "none"
    also = f" or {COMPACT_MEDIA_TYPE}" if kind == "consumer" else ""
    return error(415, "content-type", f"{shown} is not accepted; send the body as {JSON_MEDIA_TYPE}{also}")


def encoding_error(media_type: str, body: bytes) -> JobResult | None:
    """422 when the body is not in the encoding its Content-Type declares (a 4-byte look)."""
    if media_type == COMPACT_MEDIA_TYPE and not is_compact(body):
        return error(422, "body", f"a {COMPACT_MEDIA_TYPE} body starts with the bytes {MAGIC!r}")
    if media_type != COMPACT_MEDIA_TYPE and is_compact(body):
        return error(422, "body", f"not valid JSON (a compact body is sent as {COMPACT_MEDIA_TYPE})")
    return None


async def read_body(request: Request, max_bytes: int, timeout_s: float) -> bytes | JobResult:
    """The body, or the 413/408 answer; raises ClientGone when the client disconnects."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        return _too_large(max_bytes)
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout_s):
            async for chunk in request.stream():
                size += len(chunk)
                if size > max_bytes:
                    return _too_large(max_bytes)
                chunks.append(chunk)
    except TimeoutError:
        return error(
            408,
            "body",
            f"the body was not complete within {timeout_s:g} s (STICKYD_BODY_TIMEOUT_S); {size} bytes arrived",
        )
    except ClientDisconnect:
        raise ClientGone from None
    return b"".join(chunks)


def _too_large(max_bytes: int) -> JobResult:
    return error(413, "body", f"request body exceeds this server's limit of {max_bytes} bytes (STICKYD_MAX_BODY_BYTES)")
