"""One rebalance of a stored group: fence on the generation, fill in the stored state, solve in
the solver processes (stickyd.service.http.answering), store the new generation (one transaction), answer.

Fencing: the caller's `generation` must be the group's current one (-1 for a group with none);
anything else is 409 with the current generation, before any solving. Calls for one group in
one process queue on a lock, so a loser learns its 409 at once; across processes the store's
compare-and-set decides (stickyd.service.store.groups), and a call that lost only to a write that did
not change the generation (members marked leaving) is run again.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import weakref
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from stickyd.models.errors import ProblemError, first_problem
from stickyd.models.groups import RebalanceRequest
from stickyd.service.app_state import Services
from stickyd.service.groups.consumer import ConsumerRound, finish_consumer, prepare_consumer
from stickyd.service.groups.roster import RosterError
from stickyd.service.groups.streams import StreamsRound, finish_streams, prepare_streams
from stickyd.service.http.answering import solve_body
from stickyd.service.http.json_guard import load_object_fast
from stickyd.service.store import (
    Database,
    NewGeneration,
    Retention,
    StaleWrite,
    StoredGroup,
    commit_generation,
    load_group,
    summary_of_record,
)

log = logging.getLogger(__name__)

ATTEMPTS = 3


@dataclass(frozen=True)
class GroupReply:
    status: int
    body: dict[str, Any]


def refusal(status: int, field: str, reason: str, **extra: Any) -> GroupReply:
    return GroupReply(
        status, {"detail": f"{field}: {reason}" if field else reason, "field": field, "reason": reason, **extra}
    )


class GroupRebalancer:
    def __init__(self, database: Database, services: Services, retention: Retention) -> None:
        self.database = database
        self.services = services
        self.retention = retention
        self._locks: weakref.WeakValueDictionary[tuple[str, str], asyncio.Lock] = weakref.WeakValueDictionary()

    def _lock(self, tenant: str, group_id: str) -> asyncio.Lock:
        lock = self._locks.get((tenant, group_id))
        if lock is None:
            lock = asyncio.Lock()
            self._locks[(tenant, group_id)] = lock
        return lock

    async def rebalance(self, tenant: str, group_id: str, body: bytes) -> GroupReply:
        try:
            request = await asyncio.to_thread(_parse, body)
        except ProblemError as problem:
            return refusal(422, problem.field, problem.reason)
        lock = self._lock(tenant, group_id)
        async with lock:
            for _ in range(ATTEMPTS):
                stored = await asyncio.to_thread(load_group, self.database, tenant, group_id)
                answer = await self._attempt(tenant, group_id, request, stored)
                if answer is not None:
                    return answer
        return refusal(409, "generation", "the group kept changing during this call; try again")

    async def _attempt(
        self, tenant: str, group_id: str, request: RebalanceRequest, stored: StoredGroup | None
    ) -> GroupReply | None:
        """The answer, or None when only a concurrent non-generation write got in the way."""
        current = stored.visible_generation if stored else -1
        if request.generation != current:
            return _stale(group_id, request.generation, current)
        live = stored if stored and not stored.forgotten else None
        if live and live.kind != request.kind:
            return refusal(422, "kind", f"group {group_id!r} is a {live.kind} group, not {request.kind}")
        grace_ms = request.grace_ms if request.grace_ms is not None else (live.grace_ms if live else 0)
        state = live.state if live else {}
        now = time.time()
        try:
            round_ = await asyncio.to_thread(_prepare, request, state, current, grace_ms, now)
        except RosterError as problem:
            return refusal(422, problem.field, problem.reason)
        # the parsed problem goes to the solver process as it is: parsed once, never re-serialised
        result = await solve_body(request.kind, round_.problem, time.monotonic(), self.services)
        if result.status != 200:
            refused = json.loads(result.body)
            field = f"problem.{refused['field']}" if refused.get("field") else "problem"
            return refusal(result.status, field, refused.get("reason", refused.get("detail", "")))
        solution, new_state, report = await asyncio.to_thread(_finish, round_, result.body, now)
        record = {"group_id": group_id, "kind": request.kind, "solution": solution, **report}
        new = NewGeneration(
            kind=request.kind,
            grace_ms=grace_ms,
            state=new_state,
            record=record,
            members=len(new_state["members"]),
            moves=_moves(solution),
            solver=solution["stats"]["solver"],
            summary=summary_of_record(record),
        )
        try:
            generation = await asyncio.to_thread(
                commit_generation, self.database, tenant, group_id, stored, new, self.retention, now
            )
        except StaleWrite as lost:
            latest = lost.current.visible_generation if lost.current else -1
            if latest == current:
                return None
            return _stale(group_id, request.generation, latest)
        return GroupReply(200, {**record, "generation": generation})


def _stale(group_id: str, sent: int, current: int) -> GroupReply:
    when = "older than" if sent < current else "newer than"
    return refusal(
        409,
        "generation",
        f"generation {sent} is {when} the current generation {current} of group {group_id!r}; "
        "rebalance again with the current generation",
        generation=current,
    )


def _parse(body: bytes) -> RebalanceRequest:
    """The request, or ProblemError naming the field (a key given twice included, as on
    /v1/assign/*: stickyd.service.http.json_guard)."""
    data = load_object_fast(body)
    try:
        return RebalanceRequest.model_validate(data)
    except ValidationError as error:
        raise first_problem(error) from None


def _prepare(
    request: RebalanceRequest, state: dict[str, Any], generation: int, grace_ms: int, now: float
) -> ConsumerRound | StreamsRound:
    if request.kind == "consumer":
        return prepare_consumer(request.problem, state, generation, request.leaving, grace_ms, now)
    return prepare_streams(request.problem, state, request.leaving, grace_ms, now)


def _finish(
    round_: ConsumerRound | StreamsRound, body: bytes, now: float
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    solution = json.loads(body)
    if isinstance(round_, ConsumerRound):
        return finish_consumer(round_, solution, now)
    return finish_streams(round_, solution, now)


def _moves(solution: dict[str, Any]) -> int:
    stats = solution["stats"]
    return int(stats.get("moves", stats.get("active_moves", 0)))
