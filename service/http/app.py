"""The FastAPI app: the v1 assignment routes, health, metrics and the OpenAPI schema."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException

from stickyd.models import ConsumerProblem, ConsumerSolution
from stickyd.models.streams.problem import StreamsProblem, StreamsSolution
from stickyd.service.app_state import Services, get_services
from stickyd.service.groups import groups
from stickyd.service.http.answering import answer
from stickyd.service.http.assign_routes import StickydApp
from stickyd.service.http.auth import add_authentication, current_tenant
from stickyd.service.http.offline_docs import add_offline_docs
from stickyd.service.processes.fork_server import ForkServer
from stickyd.service.settings import Settings, get_settings
from stickyd.service.ui import add_ui
from stickyd.service.watch.routes import cluster

log = logging.getLogger("stickyd.access")

EXAMPLES = Path(__file__).parents[1] / "examples"

ServicesDep = Annotated[Services, Depends(get_services)]

assign = APIRouter(prefix="/v1/assign", tags=["assign"], dependencies=[Depends(current_tenant)])
ops = APIRouter(tags=["operations"])


ASSIGN_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"description": "authentication is on and the request has no live bearer token"},
    408: {"description": "the body did not arrive within STICKYD_BODY_TIMEOUT_S"},
    413: {"description": "over the server's size limits; `detail` names the field and the setting"},
    415: {"description": "the body is not declared `application/json`"},
    422: {"description": "not the contract (or not JSON, or a key given twice); `detail` names the field"},
}


@assign.post(
    "/consumer",
    response_model=ConsumerSolution,
    summary="Assign a consumer group's partitions (docs/wire-format.md, consumer assignment)",
    responses=ASSIGN_ERRORS,
)
async def assign_consumer(request: Request) -> Response:
    return await answer("consumer", request, request.app.state.services)


@assign.post(
    "/streams",
    response_model=StreamsSolution,
    summary="Assign a Kafka Streams application's tasks (docs/wire-format.md, Streams assignment)",
    responses=ASSIGN_ERRORS,
)
async def assign_streams(request: Request) -> Response:
    return await answer("streams", request, request.app.state.services)


@ops.get("/v1/health", summary="Liveness, and readiness of the solver pool")
async def health(services: ServicesDep) -> dict[str, Any]:
    return {
        "status": "ok",
        "ready": services.ready,
        "workers": services.solvers.size,
        "workers_alive": services.solvers.alive,
        "fallback_workers": services.fallback.size,
        "fallback_workers_alive": services.fallback.alive,
        "workers_idle": services.solvers.idle,
        "fallback_workers_idle": services.fallback.idle,
        "restarts": services.restarts,
        "worker_pids": services.solvers.pids,
        "spare_ready": services.solvers.spare_ready,
        "fallback_spare_ready": services.fallback.spare_ready,
    }


@ops.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def metrics(services: ServicesDep) -> Response:
    return Response(generate_latest(services.metrics.registry), media_type=CONTENT_TYPE_LATEST)


def create_app(settings: Settings | None = None, forks: ForkServer | None = None) -> StickydApp:
    """`forks`: the fork server, when the caller started it already (`stickyd serve` does, so
    that the solvers' imports overlap this module's)."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        services = Services(settings, forks)
        app.state.services = services
        await services.start()
        try:
            yield
        finally:
            await services.close()

    app = StickydApp(
        title="stickyd",
        version="1",
        summary="Provably balanced, minimally moving assignments for Kafka consumer groups and Streams.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        # the service's metrics are Prometheus (/metrics); FastAPI's own OpenTelemetry hooks would
        # look up their providers on every request
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    add_offline_docs(app)
    add_ui(app)
    add_authentication(app, settings)
    app.include_router(assign)
    app.answer_directly(assign)
    app.include_router(ops)
    app.include_router(groups)
    app.include_router(cluster)
    _add_error_handlers(app)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        field = ".".join(str(p) for p in first.get("loc", ()))
        reason = str(first.get("msg", "invalid request"))
        return JSONResponse({"detail": f"{field}: {reason}", "field": field, "reason": reason}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"detail": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> JSONResponse:
        log.exception("request failed")
        request.app.state.services.metrics.requests.labels(request.url.path, "-", "503").inc()
        return JSONResponse({"detail": f"the solver service failed ({type(exc).__name__}); try again"}, status_code=503)


def _openapi(app: FastAPI) -> dict[str, Any]:
    """The generated schema, with the contract's request bodies and examples put in."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    bodies: dict[str, tuple[Any, str]] = {
        "/v1/assign/consumer": (ConsumerProblem, "consumer-"),
        "/v1/assign/streams": (StreamsProblem, "streams-"),
    }
    for path, (model, prefix) in bodies.items():
        body = model.model_json_schema(ref_template="#/components/schemas/{model}")
        components.update(body.pop("$defs", {}))
        components[model.__name__] = body
        examples = {f.stem: {"value": json.loads(f.read_text())} for f in sorted(EXAMPLES.glob(f"{prefix}*.json"))}
        schema["paths"][path]["post"]["requestBody"] = {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {"$ref": f"#/components/schemas/{model.__name__}"},
                    "examples": examples,
                }
            },
        }
    for operations in schema["paths"].values():
        for operation in operations.values():
            # a request body declared from a model: its nested models go to the components
            declared = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
            components.update(declared.get("schema", {}).pop("$defs", {}))
    app.openapi_schema = schema
    return schema
