"""Who a request acts for: bearer tokens (`Authorization: Bearer <token>`), each scoped to one
tenant, looked up by digest in the service's database (service/store/tokens.py).

`STICKYD_AUTH=required|off`; unset, authentication is required whenever the service listens
beyond loopback (`--host 0.0.0.0` included) and off on a loopback address. With it off every
request acts for the tenant `default`. A refusal is 401 with `WWW-Authenticate: Bearer` and never
repeats the token; nothing here logs a header.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
from typing import Annotated

from fastapi import Depends, FastAPI, Request
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from stickyd.service.settings import Settings
from stickyd.service.store import DEFAULT_TENANT
from stickyd.service.store.tokens import tenant_of

log = logging.getLogger(__name__)

MAX_TOKEN_CHARS = 512
"""Longer Authorization values are refused without being looked at further."""


class Unauthorized(Exception):
    """The request carries no usable token; `reason` says which way (without the token)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def listens_on_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and `localhost`; False for 0.0.0.0, :: and every other name."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def auth_required(settings: Settings) -> bool:
    """STICKYD_AUTH when set; otherwise required unless the service listens on loopback only."""
    if settings.auth is not None:
        return settings.auth == "required"
    return not listens_on_loopback(settings.host)


def bearer_token(header: str | None) -> str:
    """The token of an `Authorization: Bearer <token>` header; raises Unauthorized otherwise."""
    if not header:
        raise Unauthorized("no Authorization header; send `Authorization: Bearer <token>` (stickyd tokens create)")
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("the Authorization header is not `Bearer <token>`")
    if len(token) > MAX_TOKEN_CHARS or not token.isascii():
        raise Unauthorized("unknown or revoked token")
    return token


BEARER = HTTPBearer(
    auto_error=False,
    scheme_name="token",
    description="a token from `stickyd tokens create --tenant NAME` (when STICKYD_AUTH is required)",
)
"""Declares the scheme in the OpenAPI schema (Swagger UI's Authorize button); the header itself is
read by current_tenant, which says why a token is refused."""


async def current_tenant(
    request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)] = None
) -> str:
    """The tenant of the request's token (`default` while authentication is off)."""
    if not request.app.state.auth_required:
        return DEFAULT_TENANT
    token = bearer_token(request.headers.get("authorization"))
    tenant = await asyncio.to_thread(tenant_of, request.app.state.database, token)
    if tenant is None:
        raise Unauthorized("unknown or revoked token")
    return tenant


Tenant = Annotated[str, Depends(current_tenant)]
"""The tenant a request acts for; every state the service keeps is keyed by it."""


def add_authentication(app: FastAPI, settings: Settings) -> None:
    """Decide once whether tokens are required, and answer Unauthorized with a 401."""
    required = auth_required(settings)
    app.state.auth_required = required
    log.info(
        "authentication %s (STICKYD_AUTH=%s, listening on %s)",
        "required: bearer tokens from `stickyd tokens create`"
        if required
        else "off: every request is tenant 'default'",
        settings.auth or "unset",
        settings.host,
    )

    @app.exception_handler(Unauthorized)
    async def unauthorized(request: Request, exc: Unauthorized) -> Response:
        route = request.scope.get("route")
        path = getattr(route, "path", "-")
        request.app.state.services.metrics.rejected.labels(path, "401").inc()
        body = {"detail": f"authorization: {exc.reason}", "field": "authorization", "reason": exc.reason}
        return Response(
            json.dumps(body), status_code=401, media_type="application/json", headers={"WWW-Authenticate": "Bearer"}
        )
