"""One assignment request from arrival to answer, keeping the promise that the time limit is the
response time: the deadline counts from arrival (queueing included), the solver process's stages
share what is left, a solve still running at the deadline plus the response margin is stopped and
the fallback pool answers (bounded by STICKYD_FALLBACK_LIMIT_MS, else a 503), and a client that
goes away has its solve stopped."""

from __future__ import annotations

import asyncio
import logging
import re
import time

from starlette.requests import Request
from starlette.responses import Response

from service.jobs import JobResult, Kind
from service.pool import FALLBACK_REASON, Timing, overrun_error
from service.request_body import ClientGone, media_type_error, read_body
from service.services import Services

log = logging.getLogger("stickyd.access")

TIME_LIMIT_HINT = re.compile(rb'"time_limit_ms"\s*:\s*([0-9]{1,9})')
REPLY_RESERVE_S = 0.02
"""Kept from the response margin for sending the fallback's answer."""


def time_limit_hint_ms(body: bytes) -> int | None:
    """The request's time_limit_ms as far as a byte scan can tell, without parsing on the event
    loop. Only bounds the wait for an idle solver process: the solver process reads the real one."""
    at = body.rfind(b'"time_limit_ms"')
    if at < 0:
        return None
    match = TIME_LIMIT_HINT.match(body, at)
    return int(match.group(1)) if match else None


async def answer(kind: Kind, request: Request, services: Services) -> Response:
    arrived = time.monotonic()
    settings = services.settings
    endpoint = f"/v1/assign/{kind}"
    try:
        body = media_type_error(request) or await read_body(request, settings.max_body_bytes, settings.body_timeout_s)
    except ClientGone:
        log.info("endpoint=%s client disconnected before its body was complete", endpoint)
        services.metrics.disconnects.labels(endpoint, "body").inc()
        return Response(status_code=400)
    timing = Timing()
    if isinstance(body, JobResult):
        result = body
    else:
        solving = asyncio.ensure_future(solve_body(kind, body, arrived, services, timing))
        gone = asyncio.ensure_future(_disconnected(request))
        done, _ = await asyncio.wait({solving, gone}, return_when=asyncio.FIRST_COMPLETED)
        if solving not in done:
            solving.cancel()
            await asyncio.gather(solving, return_exceptions=True)
            services.metrics.disconnects.labels(endpoint, "solve").inc()
            services.metrics.cancellations.labels(endpoint, "client-gone").inc()
            log.info("endpoint=%s client disconnected while its request was solved; solve stopped", endpoint)
            return Response(status_code=400)
        gone.cancel()
        result = solving.result()
    services.record(endpoint, result, time.monotonic() - arrived, timing)
    return Response(content=result.body, status_code=result.status, media_type="application/json")


async def _disconnected(request: Request) -> None:
    """Returns when the client has gone away (the body is read by then, so the next ASGI message
    is the disconnect)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def solve_body(
    kind: Kind, body: bytes, arrived: float, services: Services, timing: Timing | None = None
) -> JobResult:
    """The answer to a contract body: a solver process within the deadline counted from `arrived`,
    else the fallback pool; never raises for the client's mistakes."""
    timing = timing or Timing()
    settings = services.settings
    margin_s = settings.response_margin_ms / 1000 - REPLY_RESERVE_S
    hint_ms = min(time_limit_hint_ms(body) or settings.default_time_limit_ms, settings.max_time_limit_ms)
    result = await services.solvers.run(
        kind,
        body,
        services.limits,
        arrived=arrived,
        guard=arrived + hint_ms / 1000 + margin_s,
        guard_after_deadline_s=margin_s,
        timing=timing,
    )
    if result is not None:
        return result
    endpoint = f"/v1/assign/{kind}"
    log.warning("endpoint=%s solve still running at its deadline plus the margin; the fallback answers", endpoint)
    services.metrics.cancellations.labels(endpoint, "deadline").inc()
    limit_s = settings.fallback_limit_ms / 1000
    fallback = await services.fallback.run(
        kind,
        body,
        services.limits,
        arrived=arrived,
        guard=time.monotonic() + limit_s,
        guard_after_deadline_s=margin_s + limit_s,
        fallback_reason=FALLBACK_REASON,
        timing=Timing(),
    )
    return fallback if fallback is not None else overrun_error()
