"""POST /v1/assign/consumer and /v1/assign/streams answered straight from the ASGI call, before
FastAPI's routing, middleware stack and dependency solving (about half of the web process's CPU
per small request went there).

The routes stay declared on the FastAPI app (OpenAPI schema, docs), and the answers are the same:
the same authentication check (stickyd.service.http.auth.current_tenant) and the app's own handlers for a 401
and for an unexpected failure (503), then stickyd.service.http.answering.answer.
"""

from __future__ import annotations

import inspect
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from stickyd.service.http.answering import answer
from stickyd.service.http.auth import Unauthorized, current_tenant
from stickyd.service.processes.job import Kind

DIRECT: dict[str, Kind] = {"/v1/assign/consumer": "consumer", "/v1/assign/streams": "streams"}


class StickydApp(FastAPI):
    """FastAPI with the two assignment routes served directly (see the module's docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._direct: dict[str, tuple[Kind, APIRoute]] = {}

    def answer_directly(self, router: APIRouter) -> None:
        """Serve `router`'s POST routes among DIRECT straight from __call__ (the router stays
        included for the schema; its route is what the 401 handler and the metrics name)."""
        for route in router.routes:
            if isinstance(route, APIRoute) and route.path in DIRECT and "POST" in (route.methods or ()):
                self._direct[route.path] = (DIRECT[route.path], route)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and not self.root_path:
            direct = self._direct.get(scope["path"])
            if direct is not None:
                scope["app"], scope["route"] = self, direct[1]
                await self._answer(direct[0], scope, receive, send)
                return
        await super().__call__(scope, receive, send)

    async def _answer(self, kind: Kind, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        response: Response
        try:
            if self.state.auth_required:
                await current_tenant(request)
            response = await answer(kind, request, self.state.services)
        except Unauthorized as refused:
            response = await self._handled(Unauthorized, request, refused)
        except Exception as failure:  # noqa: BLE001 - the app's own handler answers 503 and logs it
            response = await self._handled(Exception, request, failure)
        await response(scope, receive, send)

    async def _handled(self, kind: type[Exception], request: Request, problem: Exception) -> Response:
        """The answer of the app's exception handler for `kind` (service/http/auth.py, service/http/app.py)."""
        answered = self.exception_handlers[kind](request, problem)
        return await answered if inspect.isawaitable(answered) else answered
