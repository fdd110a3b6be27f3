"""`/v1/groups`: groups as a resource (docs/wire-format.md, group state). Opens the database when the app
starts (migrating it) and closes it when the app stops."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError

from stickyd.models.errors import first_problem
from stickyd.models.groups import (
    GroupHistory,
    GroupList,
    GroupState,
    GroupSummary,
    LeaveRequest,
    RebalanceRequest,
    RebalanceResponse,
)
from stickyd.service.groups.rebalance import ATTEMPTS, GroupRebalancer, GroupReply, refusal
from stickyd.service.groups.tenancy import Tenant
from stickyd.service.http.request_body import ClientGone, media_type_error, read_body
from stickyd.service.processes.solve_job import JobResult
from stickyd.service.store import (
    Retention,
    StaleWrite,
    StoredGroup,
    count_history,
    forget_group,
    list_groups,
    load_group,
    open_database,
    read_history,
    update_state,
)

log = logging.getLogger("stickyd.access")


@asynccontextmanager
async def _open_store(app: FastAPI) -> AsyncIterator[None]:
    services = app.state.services
    settings = services.settings
    database = await asyncio.to_thread(open_database, settings.data_dir, settings.database_url)
    app.state.database = database
    app.state.groups = GroupRebalancer(
        database,
        services,
        Retention(settings.history_max_generations, settings.history_max_age_s),
    )
    try:
        yield
    finally:
        database.close()


groups = APIRouter(prefix="/v1/groups", tags=["groups"], lifespan=_open_store)


def get_rebalancer(request: Request) -> GroupRebalancer:
    rebalancer: GroupRebalancer = request.app.state.groups
    return rebalancer


Rebalancer = Annotated[GroupRebalancer, Depends(get_rebalancer)]

ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"description": "authentication is on and the request has no live bearer token"},
    404: {"description": "no such group (for this tenant)"},
    422: {"description": "not a valid request; `detail` names the field"},
}


def _json(answer: GroupReply) -> Response:
    return JSONResponse(answer.body, status_code=answer.status)


def _unknown(group_id: str) -> Response:
    return _json(refusal(404, "group_id", f"no group {group_id!r}"))


async def _read(request: Request) -> bytes | Response:
    """The body, or the 415/413/408 answer (a client gone before its body was complete: 400)."""
    settings = request.app.state.services.settings
    try:
        body = media_type_error(request) or await read_body(request, settings.max_body_bytes, settings.body_timeout_s)
    except ClientGone:
        log.info("endpoint=%s client disconnected before its body was complete", request.url.path)
        return Response(status_code=400)
    if isinstance(body, JobResult):
        return Response(content=body.body, status_code=body.status, media_type="application/json")
    return body


async def _live(rebalancer: GroupRebalancer, tenant: str, group_id: str) -> StoredGroup | None:
    stored = await asyncio.to_thread(load_group, rebalancer.database, tenant, group_id)
    return stored if stored is not None and not stored.forgotten else None


@groups.post(
    "/{group_id}/rebalance",
    response_model=RebalanceResponse,
    summary="Rebalance a stored group: fence on the generation, solve, store the next generation",
    responses={
        **ERRORS,
        409: {"description": "`generation` is not the group's current one; the body's `generation` says which is"},
        413: {"description": "over the server's size limits"},
        415: {"description": "the body is not declared application/json"},
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": RebalanceRequest.model_json_schema()}},
        }
    },
)
async def rebalance(group_id: str, request: Request, tenant: Tenant, rebalancer: Rebalancer) -> Response:
    body = await _read(request)
    if isinstance(body, Response):
        return body
    answer = await rebalancer.rebalance(tenant, group_id, body)
    log.info(
        "endpoint=/v1/groups/{group_id}/rebalance status=%d group=%s generation=%s",
        answer.status,
        group_id,
        answer.body.get("generation"),
    )
    return _json(answer)


@groups.get("", response_model=GroupList, summary="This tenant's groups")
async def list_all(tenant: Tenant, rebalancer: Rebalancer) -> GroupList:
    stored = await asyncio.to_thread(list_groups, rebalancer.database, tenant)
    return GroupList(
        groups=[
            GroupSummary(
                group_id=g.group_id,
                kind=g.kind,
                generation=g.generation,
                members=len(g.state.get("members", {})),
                leaving=len(g.state.get("leaving", [])),
                held=len(g.state.get("lost", {})),
                updated_at=g.updated_at,
            )
            for g in stored
        ]
    )


@groups.get("/{group_id}", response_model=GroupState, summary="A group's current state", responses=ERRORS)
async def show(group_id: str, tenant: Tenant, rebalancer: Rebalancer) -> Response | GroupState:
    stored = await _live(rebalancer, tenant, group_id)
    if stored is None:
        return _unknown(group_id)
    history = await asyncio.to_thread(count_history, rebalancer.database, tenant, group_id)
    return group_state(stored, history)


def group_state(stored: StoredGroup, history: int) -> GroupState:
    state = stored.state
    assignment = state.get("assignment", {})
    return GroupState(
        group_id=stored.group_id,
        kind=stored.kind,  # type: ignore[arg-type]
        generation=stored.generation,
        grace_ms=stored.grace_ms,
        created_at=stored.created_at,
        updated_at=stored.updated_at,
        members=state.get("members", {}),
        assignment=assignment,
        target=state.get("target"),
        leaving=[{"id": m, "empty": _empty(assignment.get(m, {}))} for m in state.get("leaving", [])],  # type: ignore[misc]
        held=[
            {"id": m, "since": h["since"], "until": h["until"], "assignment": h["owned"]}  # type: ignore[misc]
            for m, h in state.get("lost", {}).items()
        ],
        history=history,
        topics=state.get("topics", {}),
        stats=state.get("stats"),
    )


def _empty(owned: dict[str, Any]) -> bool:
    """Nothing to run: no partitions (consumer), no active tasks (streams)."""
    if "active" in owned:
        return not owned["active"]
    return not any(owned.values())


@groups.get("/{group_id}/history", response_model=GroupHistory, summary="Retained generations, newest first")
async def history(
    group_id: str,
    tenant: Tenant,
    rebalancer: Rebalancer,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
) -> Response | GroupHistory:
    if await _live(rebalancer, tenant, group_id) is None:
        return _unknown(group_id)
    rows = await asyncio.to_thread(read_history, rebalancer.database, tenant, group_id, limit)
    return GroupHistory.model_validate({"group_id": group_id, "generations": rows})


@groups.post(
    "/{group_id}/leaving",
    response_model=GroupState,
    summary="Mark members as leaving (planned departure): drained from the next rebalance on",
    responses=ERRORS,
)
async def leave(group_id: str, request: Request, tenant: Tenant, rebalancer: Rebalancer) -> Response | GroupState:
    body = await _read(request)
    if isinstance(body, Response):
        return body
    try:
        asked = LeaveRequest.model_validate(json.loads(body))
    except ValidationError as error:
        problem = first_problem(error)
        return _json(refusal(422, problem.field, problem.reason))
    except ValueError as error:
        return _json(refusal(422, "body", f"not valid JSON ({error})"))
    for _ in range(ATTEMPTS):
        stored = await _live(rebalancer, tenant, group_id)
        if stored is None:
            return _unknown(group_id)
        members = stored.state.get("members", {})
        for i, member in enumerate(asked.members):
            if member not in members:
                return _json(refusal(422, f"members[{i}]", f"member {member!r} is not in group {group_id!r}"))
        leaving = sorted({*stored.state.get("leaving", []), *asked.members})
        try:
            updated = await asyncio.to_thread(
                update_state, rebalancer.database, stored, {**stored.state, "leaving": leaving}, time.time()
            )
        except StaleWrite:
            continue
        history = await asyncio.to_thread(count_history, rebalancer.database, tenant, group_id)
        return group_state(updated, history)
    return _json(refusal(409, "group_id", "the group kept changing during this call; try again"))


@groups.delete("/{group_id}", status_code=204, summary="Forget a group's state and history", responses=ERRORS)
async def forget(group_id: str, tenant: Tenant, rebalancer: Rebalancer) -> Response:
    if not await asyncio.to_thread(forget_group, rebalancer.database, tenant, group_id, time.time()):
        return _unknown(group_id)
    return Response(status_code=204)
