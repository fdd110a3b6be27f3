"""A "what if" rebalance of a stored group: its current generation with members removed or added,
partitions (Streams: a subtopology's tasks) added or another strategy, solved in the solver
processes the way its next rebalance would be, and compared with the current assignment. Nothing
is stored.

The problem is built as the group's next rebalance would build it (prepare_consumer,
prepare_streams): every member that stays owns what the current generation gave it; members
marked leaving are drained; members held in their grace keep taking part; a removed member is
gone at once (no grace). A Streams application is compared on its active tasks.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from stickyd.models.group_insight import Figures, MemberChange, WhatIfRequest, WhatIfResponse
from stickyd.service.app_state import Services
from stickyd.service.groups.consumer import prepare_consumer
from stickyd.service.groups.rebalance import GroupReply, refusal
from stickyd.service.groups.roster import RosterError
from stickyd.service.groups.streams import prepare_streams
from stickyd.service.http.answering import solve_body
from stickyd.service.store import StoredGroup

Holdings = dict[str, set[Any]]
"""member -> what it holds: (topic, partition) pairs, or a Streams client's active tasks."""

STRATEGIES = {"consumer": ("optimal", "sticky", "range", "roundrobin"), "streams": ("optimal", "sticky", "greedy")}


async def what_if(services: Services, stored: StoredGroup, asked: WhatIfRequest) -> GroupReply | WhatIfResponse:
    """stickyd's answer to the changed group beside the current one, or a refusal naming the field."""
    state = stored.state
    refused = _check(stored.kind, state, asked)
    if refused is not None:
        return refused
    strategy = asked.strategy or (state.get("stats") or {}).get("strategy") or "optimal"
    # building, reading and comparing a large group's answers is CPU work: off the event loop
    try:
        problem = await asyncio.to_thread(_trial_problem, stored, asked, strategy)
    except RosterError as problem_error:
        return refusal(422, problem_error.field, problem_error.reason)
    result = await solve_body(stored.kind, problem, time.monotonic(), services)  # type: ignore[arg-type]
    if result.status != 200:
        answer = json.loads(result.body)
        return refusal(result.status, answer.get("field") or "", answer.get("reason", answer.get("detail", "")))
    return await asyncio.to_thread(_compare, stored, strategy, result.body)


def _sizes(kind: str, state: dict[str, Any]) -> dict[str, int]:
    if kind == "consumer":
        return dict(state.get("topics", {}))
    return {str(s["id"]): int(s.get("partitions", 0)) for s in state.get("subtopologies", [])}


def _check(kind: str, state: dict[str, Any], asked: WhatIfRequest) -> GroupReply | None:
    members: dict[str, Any] = state.get("members", {})
    lost: dict[str, Any] = state.get("lost", {})
    if asked.strategy is not None and asked.strategy not in STRATEGIES[kind]:
        known = ", ".join(STRATEGIES[kind])
        return refusal(422, "strategy", f"a {kind} group takes {known}, not {asked.strategy!r}")
    for i, member in enumerate(asked.remove):
        if member not in members and member not in lost:
            return refusal(422, f"remove[{i}]", f"member {member!r} is not in the group")
    seen: set[str] = set()
    for i, new in enumerate(asked.add):
        if new.id in members or new.id in lost:
            return refusal(422, f"add[{i}].id", f"member {new.id!r} is in the group already")
        if new.id in seen:
            return refusal(422, f"add[{i}].id", f"member {new.id!r} is added twice")
        if kind == "streams" and new.topics is not None:
            return refusal(422, f"add[{i}].topics", "a Streams client takes every subtopology; leave topics out")
        seen.add(new.id)
    sizes = _sizes(kind, state)
    what = "topic" if kind == "consumer" else "subtopology"
    for topic in asked.add_partitions:
        if topic not in sizes:
            known = ", ".join(sorted(sizes)) or "none"
            return refusal(422, f"add_partitions.{topic}", f"unknown {what} {topic!r} (the group's: {known})")
    return None


def _trial_problem(stored: StoredGroup, asked: WhatIfRequest, strategy: str) -> dict[str, Any]:
    state = stored.state
    removed = set(asked.remove)
    trial_state = {**state, "lost": {m: held for m, held in state.get("lost", {}).items() if m not in removed}}
    options: dict[str, Any] = {"strategy": strategy}
    if asked.time_limit_ms is not None:
        options["time_limit_ms"] = asked.time_limit_ms
    if stored.kind == "consumer":
        problem = _consumer_problem(state, asked, options)
        return prepare_consumer(problem, trial_state, stored.generation, [], 0, time.time()).problem
    return prepare_streams(_streams_problem(state, asked, options), trial_state, [], 0, time.time()).problem


def _consumer_problem(state: dict[str, Any], asked: WhatIfRequest, options: dict[str, Any]) -> dict[str, Any]:
    topics = _sizes("consumer", state)
    for topic, more in asked.add_partitions.items():
        topics[topic] += more
    members: list[dict[str, Any]] = []
    for member_id, member in state.get("members", {}).items():
        if member_id not in asked.remove:
            entry = {"id": member_id, "topics": member.get("topics", [])}
            members.append(entry | ({"rack": member["rack"]} if member.get("rack") else {}))
    for new in asked.add:
        entry = {"id": new.id, "topics": new.topics if new.topics is not None else sorted(topics)}
        members.append(entry | ({"rack": new.rack} if new.rack else {}))
    problem: dict[str, Any] = {"topics": topics, "members": members, "options": options}
    racks = state.get("partition_racks")
    if racks:
        problem["partition_racks"] = {
            topic: per_partition + [[] for _ in range(topics[topic] - len(per_partition))]
            for topic, per_partition in racks.items()
        }
    return problem


def _streams_problem(state: dict[str, Any], asked: WhatIfRequest, options: dict[str, Any]) -> dict[str, Any]:
    subtopologies = [
        {**s, "partitions": int(s.get("partitions", 0)) + asked.add_partitions.get(str(s["id"]), 0)}
        for s in state.get("subtopologies", [])
    ]
    clients: list[dict[str, Any]] = [
        {"id": client_id, **client}
        for client_id, client in state.get("members", {}).items()
        if client_id not in asked.remove
    ]
    clients += [{"id": new.id} | ({"rack": new.rack} if new.rack else {}) for new in asked.add]
    problem = {"subtopologies": subtopologies, "clients": clients, "options": options}
    if state.get("config"):
        problem["config"] = state["config"]
    return problem


def _holdings(kind: str, assignment: dict[str, Any]) -> Holdings:
    if kind == "consumer":
        return {m: {(t, p) for t, parts in owned.items() for p in parts} for m, owned in assignment.items()}
    return {m: set(owned.get("active", [])) for m, owned in assignment.items()}


def _current(kind: str, state: dict[str, Any]) -> Holdings:
    """Who holds what now: a consumer group's assignment (its target while a cooperative hand-over
    is under way), a Streams application's running actives; with what is held for members in
    their grace."""
    owned = (
        dict(state.get("target") or state.get("assignment", {})) if kind == "consumer" else dict(state["assignment"])
    )
    for member_id, held in state.get("lost", {}).items():
        owned[member_id] = held.get("owned", {})
    return _holdings(kind, owned)


def _figures(holdings: Holdings, members: list[str], moves: int) -> Figures:
    loads = [len(holdings.get(m, ())) for m in members] or [0]
    total = sum(len(held) for held in holdings.values())
    return Figures(partitions=total, members=len(members), min_load=min(loads), max_load=max(loads), moves=moves)


def _compare(stored: StoredGroup, strategy: str, answer: bytes) -> WhatIfResponse:
    solution = json.loads(answer)
    stats = solution["stats"]
    current = _current(stored.kind, stored.state)
    proposed = _holdings(stored.kind, solution.get("target") or solution["assignment"])
    changes = []
    for member_id in sorted(set(current) | set(proposed)):
        before, after = current.get(member_id, set()), proposed.get(member_id, set())
        changes.append(
            MemberChange(
                id=member_id, now=len(before), then=len(after), gained=len(after - before), lost=len(before - after)
            )
        )
    changes.sort(key=lambda c: (-abs(c.then - c.now), -c.gained - c.lost, c.id))
    leaving = set(stored.state.get("leaving", []))
    return WhatIfResponse(
        group_id=stored.group_id,
        kind=stored.kind,  # type: ignore[arg-type]
        generation=stored.generation,
        strategy=strategy,
        current=_figures(current, [m for m in current if m not in leaving], 0),
        proposed=_figures(proposed, [m for m in proposed if m not in leaving], sum(c.lost for c in changes)),
        solver=stats["solver"],
        optimal=stats["optimal"],
        fallback=stats["fallback"],
        time_ms=stats["time_ms"],
        warnings=stats.get("warnings", []),
        members=changes,
    )
