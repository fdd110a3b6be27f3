"""One assignment request from arrival to answer, keeping the promise that the time limit is the
response time: the deadline counts from arrival (queueing included), the solver process's stages
share what is left, a solve still running at the deadline plus the response margin is stopped and
the fallback pool answers (bounded by STICKYD_FALLBACK_LIMIT_MS, else a 503), and a client that
goes away has its solve stopped."""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from stickyd.models.consumer.compact import MEDIA_TYPE as COMPACT_MEDIA_TYPE
from stickyd.models.consumer.compact import is_compact
from stickyd.service.admission.promise_floor import answer_cost_ms, floor_estimate_ms
from stickyd.service.app_state import Services
from stickyd.service.http.request_body import (
    JSON_MEDIA_TYPE,
    ClientGone,
    declared_media_type,
    encoding_error,
    media_type_error,
    read_body,
)
from stickyd.service.processes.job import JobResult, Kind
from stickyd.service.processes.pool import (
    EXITED_REASON,
    FALLBACK_REASON,
    QUEUE_REASON,
    Timing,
    Watch,
    busy_error,
    overrun_error,
)
from stickyd.solvers.time_policy import CHEAP_S, PATIENCE_FACTOR, REPLY_RESERVE_S, REPLY_S_PER_MB, START_RESERVE_S

log = logging.getLogger("stickyd.access")

TIME_LIMIT_HINT = re.compile(rb'"time_limit_ms"\s*:\s*([0-9]{1,9})')
CLIENT_GONE = "the client went away"


def time_limit_hint_ms(body: bytes | dict[str, Any]) -> int | None:
    """The request's time_limit_ms as far as a byte scan can tell, without parsing on the event
    loop (or as a parsed request says). Only bounds the wait for an idle solver process: the
    solver process reads the real one."""
    if isinstance(body, dict):
        options = body.get("options")
        said = options.get("time_limit_ms") if isinstance(options, dict) else None
        return said if isinstance(said, int) and not isinstance(said, bool) and said > 0 else None
    if is_compact(body):
        return _compact_time_limit_hint_ms(body)
    at = body.rfind(b'"time_limit_ms"')
    if at < 0:
        return None
    match = TIME_LIMIT_HINT.match(body, at)
    return int(match.group(1)) if match else None


COMPACT_TIME_LIMIT = b"\xadtime_limit_ms"
"""the key as MessagePack writes it (a 13-byte fixstr)."""


def _compact_time_limit_hint_ms(body: bytes) -> int | None:
    """time_limit_ms of a compact body, read at its key's last occurrence (an unsigned or int32
    MessagePack integer); None when not found."""
    at = body.rfind(COMPACT_TIME_LIMIT)
    if at < 0:
        return None
    value = body[at + len(COMPACT_TIME_LIMIT) : at + len(COMPACT_TIME_LIMIT) + 5]
    if value[:1] and value[0] < 0x80:
        return value[0] or None
    size = {0xCC: 1, 0xCD: 2, 0xCE: 4, 0xD0: 1, 0xD1: 2, 0xD2: 4}.get(value[0] if value else -1)
    if size is None or len(value) < 1 + size:
        return None
    said = int.from_bytes(value[1 : 1 + size], "big", signed=value[0] >= 0xD0)
    return said if said > 0 else None


def reply_reserve_s(body: bytes | dict[str, Any]) -> float:
    """What is kept from the response margin for writing the answer to the client."""
    return REPLY_RESERVE_S + (REPLY_S_PER_MB * len(body) / 1e6 if isinstance(body, bytes) else 0.0)


async def answer(kind: Kind, request: Request, services: Services) -> Response:
    arrived = time.monotonic()
    settings = services.settings
    endpoint = f"/v1/assign/{kind}"
    try:
        body = media_type_error(request, kind) or await read_body(
            request, settings.max_body_bytes, settings.body_timeout_s
        )
        if isinstance(body, bytes):
            body = encoding_error(declared_media_type(request), body) or body
    except ClientGone:
        log.info("endpoint=%s client disconnected before its body was complete", endpoint)
        services.metrics.disconnects.labels(endpoint, "body").inc()
        return Response(status_code=400)
    timing = Timing()
    if isinstance(body, JobResult):
        result = body
    else:
        try:
            result = await _solve_unless_gone(kind, body, arrived, request, services, timing)
        except ClientGone:
            services.metrics.disconnects.labels(endpoint, "solve").inc()
            services.metrics.cancellations.labels(endpoint, "client-gone").inc()
            log.info("endpoint=%s client disconnected while its request was solved; solve stopped", endpoint)
            return Response(status_code=400)
    services.record(endpoint, result, time.monotonic() - arrived, timing)
    headers = {"Retry-After": str(timing.retry_after_s)} if timing.retry_after_s else None
    compact = result.status == 200 and is_compact(result.body)
    media_type = COMPACT_MEDIA_TYPE if compact else JSON_MEDIA_TYPE
    return Response(content=result.body, status_code=result.status, media_type=media_type, headers=headers)


async def _solve_unless_gone(
    kind: Kind, body: bytes, arrived: float, request: Request, services: Services, timing: Timing
) -> JobResult:
    """solve_body in this task, with one watcher task that cancels it when the client goes away
    (then ClientGone); one task per request instead of two and an asyncio.wait."""
    this = asyncio.current_task()
    assert this is not None
    watcher = asyncio.ensure_future(_disconnected(request))
    solving, gone = [True], [False]

    def client_gone(done: asyncio.Future[None]) -> None:
        if solving[0] and not done.cancelled() and done.exception() is None:
            gone[0] = True
            this.cancel(CLIENT_GONE)

    watcher.add_done_callback(client_gone)
    try:
        return await solve_body(kind, body, arrived, services, timing)
    except asyncio.CancelledError:
        if gone[0] and this.uncancel() == 0:
            raise ClientGone from None
        raise
    finally:
        solving[0] = False  # a callback already scheduled must not cancel what follows
        watcher.cancel()


async def _disconnected(request: Request) -> None:
    """Returns when the client has gone away (the body is read by then, so the next ASGI message
    is the disconnect)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def solve_body(
    kind: Kind, body: bytes | dict[str, Any], arrived: float, services: Services, timing: Timing | None = None
) -> JobResult:
    """The answer to a contract body (JSON bytes, or a request the caller parsed already): a
    solver process within the deadline counted from `arrived`; a request no solver process can
    take in time gets the fallback pool if it has a process free, else 503 with Retry-After at
    once (not a late answer); a stuck solve is handed to the fallback pool. Never raises for the
    client's mistakes."""
    timing = timing or Timing()
    settings = services.settings
    margin_s = max(0.0, settings.response_margin_ms / 1000 - reply_reserve_s(body))
    hint_ms = min(time_limit_hint_ms(body) or settings.default_time_limit_ms, settings.max_time_limit_ms)
    # the cheapest answer's cost and the floor, from the size alone; the solver process tells the
    # deadline once parsed
    size = len(body) if isinstance(body, bytes) else 0
    cost_s = answer_cost_ms(kind, size, settings.floor_scale) / 1000
    deadline = arrived + max(hint_ms / 1000, floor_estimate_ms(kind, size, settings.floor_scale) / 1000, cost_s)
    endpoint = f"/v1/assign/{kind}"
    try:
        result = await services.solvers.run(
            kind,
            body,
            services.limits,
            arrived=arrived,
            watch=Watch(
                guard=deadline + margin_s,
                guard_after_deadline_s=margin_s,
                start_by=deadline + margin_s - cost_s - START_RESERVE_S,
                patience_s=PATIENCE_FACTOR * cost_s,
                hand_off_ready=lambda: services.fallback.idle > 0,
                hand_off_limit_s=settings.fallback_limit_ms / 1000,
            ),
            timing=timing,
            live=services.live_rates(body),
        )
    except ProcessLookupError:
        # the solver process died with the job (replaced already): the fallback pool answers
        log.warning("endpoint=%s the solver process exited during the solve; the fallback answers", endpoint)
        services.metrics.cancellations.labels(endpoint, "process-exited").inc()
        return await _fallback(kind, body, arrived, services, EXITED_REASON, margin_s)
    if result is not None:
        return result
    if not timing.started:
        if services.fallback.idle == 0 or cost_s > CHEAP_S:
            return _busy(endpoint, services, timing, margin_s)
        reason = QUEUE_REASON
        log.warning("endpoint=%s no solver process free in time; the fallback answers", endpoint)
        services.metrics.cancellations.labels(endpoint, "queue").inc()
    else:
        reason = FALLBACK_REASON
        log.warning("endpoint=%s solve still running at its deadline plus the margin; the fallback answers", endpoint)
        services.metrics.cancellations.labels(endpoint, "deadline").inc()
    return await _fallback(kind, body, arrived, services, reason, margin_s)


async def _fallback(
    kind: Kind, body: bytes | dict[str, Any], arrived: float, services: Services, reason: str, margin_s: float
) -> JobResult:
    """The fallback pool's answer, bounded by STICKYD_FALLBACK_LIMIT_MS; else 503."""
    limit_s = services.settings.fallback_limit_ms / 1000
    try:
        fallback = await services.fallback.run(
            kind,
            body,
            services.limits,
            arrived=arrived,
            watch=Watch(guard=time.monotonic() + limit_s, guard_after_deadline_s=margin_s + limit_s),
            fallback_reason=reason,
            timing=Timing(),
            live=services.live_rates(body),
        )
    except ProcessLookupError:  # the fallback process died too (it is replaced): nothing answered
        fallback = None
    return fallback if fallback is not None else overrun_error()


def _busy(endpoint: str, services: Services, timing: Timing, margin_s: float) -> JobResult:
    """503 with Retry-After: every solver process is busy past the moment this request had to
    start, and the fallback pool too. Answered at once, so that the client's own fallback (the
    Kafka plug-ins' in-process assignor, stickyd.client.assignor's local heuristic) still has its time."""
    free_in_s = services.solvers.busy_until() + margin_s - time.monotonic()
    timing.retry_after_s = max(1, math.ceil(free_in_s))
    services.metrics.cancellations.labels(endpoint, "busy").inc()
    log.warning("endpoint=%s every solver process busy past the request's start-by; 503", endpoint)
    return busy_error(timing.retry_after_s)
