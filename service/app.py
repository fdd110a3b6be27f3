"""The FastAPI app: the v1 assignment routes, health, metrics and the OpenAPI schema."""

from __future__ import annotations

import json
import logging
import time
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

from models import ConsumerProblem, ConsumerSolution
from models.streams import StreamsProblem, StreamsSolution
from service.groups import groups
from service.jobs import JobResult, Kind, Limits, requested_time_limit_ms
from service.metrics import Metrics
from service.offline_docs import add_offline_docs
from service.pool import SolverPool
from service.request_body import ClientGone, media_type_error, read_body
from service.settings import Settings, get_settings

log = logging.getLogger("stickyd.access")

EXAMPLES = Path(__file__).parent / "examples"
SERVICE_GRACE_S = 0.1
"""How long past a request's time limit the service waits for a worker before falling back."""
SMALL_BODY = 1 << 20
"""Bodies up to this size are read on the event loop for their time limit; larger ones are
bounded by STICKYD_MAX_TIME_LIMIT_MS on the service side (the solver still keeps theirs)."""


class Services:
    """What the routes need, built once per app from its settings."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.metrics = Metrics()
        self.pool = SolverPool(settings.workers)
        self.limits = Limits(
            max_partitions=settings.max_partitions,
            max_members=settings.max_members,
            default_time_limit_ms=settings.default_time_limit_ms,
            max_time_limit_ms=settings.max_time_limit_ms,
        )


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]

assign = APIRouter(prefix="/v1/assign", tags=["assign"])
ops = APIRouter(tags=["operations"])


async def _handle(kind: Kind, request: Request, services: Services) -> Response:
    started = time.perf_counter()
    settings = services.settings
    endpoint = f"/v1/assign/{kind}"
    try:
        body = media_type_error(request) or await read_body(request, settings.max_body_bytes, settings.body_timeout_s)
    except ClientGone:
        log.info("endpoint=%s client disconnected before its body was complete", endpoint)
        services.metrics.disconnects.labels(endpoint).inc()
        return Response(status_code=400)
    if isinstance(body, JobResult):
        result = body
    else:
        asked = None
        if len(body) <= SMALL_BODY:
            try:
                asked = requested_time_limit_ms(json.loads(body))
            except (ValueError, RecursionError):  # the worker answers with the 422
                asked = None
        limit_ms = min(asked or settings.default_time_limit_ms, settings.max_time_limit_ms)
        result = await services.pool.solve(kind, body, services.limits, limit_ms / 1000 + SERVICE_GRACE_S)
    _record(services, endpoint, result, time.perf_counter() - started)
    return Response(content=result.body, status_code=result.status, media_type="application/json")


def _record(services: Services, endpoint: str, result: JobResult, elapsed: float) -> None:
    m = services.metrics
    m.requests.labels(endpoint, result.strategy, str(result.status)).inc()
    m.latency.labels(endpoint, result.strategy).observe(elapsed)
    if result.status == 200:
        m.solve.labels(endpoint, result.solver).observe(result.solve_ms / 1000)
        if result.fallback:
            m.fallbacks.labels(endpoint, "time-limit" if result.solver == "kip54-sticky" else "other").inc()
    else:
        m.rejected.labels(endpoint, str(result.status)).inc()
    log.info(
        "endpoint=%s status=%d partitions=%d members=%d strategy=%s solver=%s optimal=%s fallback=%s ms=%.1f",
        endpoint,
        result.status,
        result.partitions,
        result.members,
        result.strategy,
        result.solver,
        result.optimal,
        result.fallback,
        elapsed * 1000,
    )


ASSIGN_ERRORS: dict[int | str, dict[str, Any]] = {
    408: {"description": "the body did not arrive within STICKYD_BODY_TIMEOUT_S"},
    413: {"description": "over the server's size limits; `detail` names the field and the setting"},
    415: {"description": "the body is not declared `application/json`"},
    422: {"description": "not the contract (or not JSON, or a key given twice); `detail` names the field"},
}


@assign.post(
    "/consumer",
    response_model=ConsumerSolution,
    summary="Assign a consumer group's partitions (contract section 1)",
    responses=ASSIGN_ERRORS,
)
async def assign_consumer(request: Request, services: ServicesDep) -> Response:
    return await _handle("consumer", request, services)


@assign.post(
    "/streams",
    response_model=StreamsSolution,
    summary="Assign a Kafka Streams application's tasks (contract section 2)",
    responses=ASSIGN_ERRORS,
)
async def assign_streams(request: Request, services: ServicesDep) -> Response:
    return await _handle("streams", request, services)


@ops.get("/v1/health", summary="Liveness, and readiness of the solver pool")
async def health(services: ServicesDep) -> dict[str, Any]:
    pool = services.pool
    return {"status": "ok", "ready": pool.ready, "workers": pool.workers, "restarts": pool.restarts}


@ops.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def metrics(services: ServicesDep) -> Response:
    return Response(generate_latest(services.metrics.registry), media_type=CONTENT_TYPE_LATEST)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        services = Services(settings)
        app.state.services = services
        await services.pool.warm()
        try:
            yield
        finally:
            services.pool.close()

    app = FastAPI(
        title="stickyd",
        version="1",
        summary="Provably balanced, minimally moving assignments for Kafka consumer groups and Streams.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    add_offline_docs(app)
    app.include_router(assign)
    app.include_router(ops)
    app.include_router(groups)
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
    async def crashed(_: Request, exc: Exception) -> JSONResponse:
        log.exception("request failed")
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
    app.openapi_schema = schema
    return schema
