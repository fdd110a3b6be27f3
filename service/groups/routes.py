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
from stickyd.models.group_insight import Explanation, GroupTimeline, WhatIfRequest, WhatIfResponse
from stickyd.models.groups import (
    GroupHistory,
    GroupList,
    GroupState,
    GroupSummary,
    LeaveRequest,
    RebalanceRequest,
    RebalanceResponse,
    TimelineEntry,
)
from stickyd.service.groups.explain import check_item, explain
from stickyd.service.groups.rebalance import ATTEMPTS, GroupRebalancer, GroupReply, refusal
from stickyd.service.groups.tenancy import Tenant
from stickyd.service.groups.what_if import what_if
from stickyd.service.http.request_body import ClientGone, media_type_error, read_body
from stickyd.service.processes.job import JobResult
from stickyd.service.store import (
    Database,
    Retention,
    StaleWrite,
    StoredGroup,
    count_history,
    forget_group,
    list_groups,
    load_group,
    open_database,
    read_answers,
    read_history,
    read_last_generations,
    read_timeline,
    update_state,
)

log = logging.getLogger("stickyd.access")

COMPONENT_REF = "#/components/schemas/{model}"
"""Where a request body's nested models are put in the OpenAPI schema (stickyd.service.http.app)."""


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
        body = media_type_error(request, "groups") or await read_body(
            request, settings.max_body_bytes, settings.body_timeout_s
        )
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


@groups.get("", response_model=GroupList, summary="This tenant's groups, each with its last rebalance")
async def list_all(tenant: Tenant, rebalancer: Rebalancer) -> GroupList:
    return await asyncio.to_thread(_summaries, rebalancer.database, tenant)


def _summaries(database: Database, tenant: str) -> GroupList:
    summaries = []
    last_of = read_last_generations(database, tenant)
    for g in list_groups(database, tenant):
        last = last_of.get(g.group_id)
        summaries.append(
            GroupSummary(
                group_id=g.group_id,
                kind=g.kind,
                generation=g.generation,
                members=len(g.state.get("members", {})),
                leaving=len(g.state.get("leaving", [])),
                held=len(g.state.get("lost", {})),
                updated_at=g.updated_at,
                last_rebalance=_entry(last) if last else None,
            )
        )
    return GroupList(groups=summaries)


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


@groups.get(
    "/{group_id}/timeline",
    response_model=GroupTimeline,
    summary="Retained generations in figures (moves, balance, solver, time), oldest first",
    responses=ERRORS,
)
async def timeline(
    group_id: str,
    tenant: Tenant,
    rebalancer: Rebalancer,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
) -> Response | GroupTimeline:
    stored = await _live(rebalancer, tenant, group_id)
    if stored is None:
        return _unknown(group_id)
    rows = await asyncio.to_thread(read_timeline, rebalancer.database, tenant, group_id, limit)
    return GroupTimeline(group_id=group_id, kind=stored.kind, generations=[_entry(row) for row in rows])  # type: ignore[arg-type]


def _entry(row: dict[str, Any]) -> TimelineEntry:
    summary = row["summary"]
    stats = summary["stats"]
    active = (stats.get("balance") or {}).get("active") or [0, 0]  # Streams: [min, max] active tasks
    return TimelineEntry(
        generation=row["generation"],
        created_at=row["created_at"],
        members=row["members"],
        moves=row["moves"],
        solver=row["solver"],
        optimal=bool(stats.get("optimal")),
        fallback=bool(stats.get("fallback")),
        min_load=stats.get("min_load", active[0]),
        max_load=stats.get("max_load", active[1]),
        time_ms=float(stats.get("time_ms", 0.0)),
        newcomers=summary["newcomers"],
        departed=summary["departed"],
        leaving=summary["leaving"],
        held=summary["held"],
    )


@groups.post(
    "/{group_id}/what-if",
    response_model=WhatIfResponse,
    summary="Try changes on a group (members out or in, partitions or tasks, strategy); nothing is stored",
    responses={**ERRORS, 503: {"description": "no solver process could answer in time; retry after Retry-After"}},
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": WhatIfRequest.model_json_schema(ref_template=COMPONENT_REF)}},
        }
    },
)
async def try_changes(
    group_id: str, request: Request, tenant: Tenant, rebalancer: Rebalancer
) -> Response | WhatIfResponse:
    body = await _read(request)
    if isinstance(body, Response):
        return body
    try:
        asked = WhatIfRequest.model_validate(json.loads(body or b"{}"))
    except ValidationError as error:
        problem = first_problem(error)
        return _json(refusal(422, problem.field, problem.reason))
    except ValueError as error:
        return _json(refusal(422, "body", f"not valid JSON ({error})"))
    stored = await _live(rebalancer, tenant, group_id)
    if stored is None:
        return _unknown(group_id)
    answer = await what_if(rebalancer.services, stored, asked)
    return _json(answer) if isinstance(answer, GroupReply) else answer


@groups.get(
    "/{group_id}/explain",
    response_model=Explanation,
    summary="Why a partition (or Streams task) is where it is: its owners over the retained generations",
    responses=ERRORS,
)
async def explain_item(
    group_id: str,
    tenant: Tenant,
    rebalancer: Rebalancer,
    topic: Annotated[str, Query(min_length=1, description="a topic, or a Streams subtopology id")],
    partition: Annotated[int, Query(ge=0, le=2**31 - 1, description="a partition (a task's partition)")],
) -> Response | Explanation:
    stored = await _live(rebalancer, tenant, group_id)
    if stored is None:
        return _unknown(group_id)
    refused = check_item(stored.kind, stored.state, topic, partition)
    if refused is not None:
        return _json(refused)
    limit = rebalancer.retention.max_generations
    rows = await asyncio.to_thread(read_answers, rebalancer.database, tenant, group_id, limit)
    return await asyncio.to_thread(explain, stored.kind, group_id, stored.state, rows, topic, partition)
