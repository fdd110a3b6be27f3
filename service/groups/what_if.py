"""A "what if" rebalance of a stored consumer group: the group's current generation with members
removed or added, partitions added or another strategy, solved in the solver processes the way
its next rebalance would be, and compared with the current assignment. Nothing is stored.

The problem is built as the group's next rebalance would build it (prepare_consumer): every
member that stays owns what the current generation gave it; members marked leaving are drained;
members held in their grace keep taking part; a removed member is gone at once (no grace).
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
from stickyd.service.http.answering import solve_body
from stickyd.service.store import StoredGroup

Assignment = dict[str, dict[str, list[int]]]


async def what_if(services: Services, stored: StoredGroup, asked: WhatIfRequest) -> GroupReply | WhatIfResponse:
    """stickyd's answer to the changed group beside the current one, or a refusal naming the field."""
    if stored.kind != "consumer":
        return refusal(
            422, "kind", f"group {stored.group_id!r} is a {stored.kind} group; what-if takes consumer groups"
        )
    state = stored.state
    refused = _check(state, asked)
    if refused is not None:
        return refused
    strategy = asked.strategy or (state.get("stats") or {}).get("strategy") or "optimal"
    # building, reading and comparing a large group's answers is CPU work: off the event loop
    problem = await asyncio.to_thread(_trial_problem, stored, asked, strategy)
    result = await solve_body("consumer", problem, time.monotonic(), services)
    if result.status != 200:
        answer = json.loads(result.body)
        return refusal(result.status, answer.get("field") or "", answer.get("reason", answer.get("detail", "")))
    return await asyncio.to_thread(_compare, stored, strategy, result.body)


def _trial_problem(stored: StoredGroup, asked: WhatIfRequest, strategy: str) -> dict[str, Any]:
    problem, trial_state = _changed_problem(stored.state, asked, strategy)
    return prepare_consumer(problem, trial_state, stored.generation, [], 0, time.time()).problem


def _check(state: dict[str, Any], asked: WhatIfRequest) -> GroupReply | None:
    members: dict[str, Any] = state.get("members", {})
    lost: dict[str, Any] = state.get("lost", {})
    for i, member in enumerate(asked.remove):
        if member not in members and member not in lost:
            return refusal(422, f"remove[{i}]", f"member {member!r} is not in the group")
    seen: set[str] = set()
    for i, new in enumerate(asked.add):
        if new.id in members or new.id in lost:
            return refusal(422, f"add[{i}].id", f"member {new.id!r} is in the group already")
        if new.id in seen:
            return refusal(422, f"add[{i}].id", f"member {new.id!r} is added twice")
        seen.add(new.id)
    topics: dict[str, int] = state.get("topics", {})
    for topic in asked.add_partitions:
        if topic not in topics:
            known = ", ".join(sorted(topics)) or "none"
            return refusal(422, f"add_partitions.{topic}", f"unknown topic {topic!r} (the group's topics: {known})")
    return None


def _changed_problem(
    state: dict[str, Any], asked: WhatIfRequest, strategy: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the problem with the changes, the state to fill it from: removed held members dropped)."""
    removed = set(asked.remove)
    topics = dict(state.get("topics", {}))
    for topic, more in asked.add_partitions.items():
        topics[topic] += more
    members: list[dict[str, Any]] = []
    for member_id, member in state.get("members", {}).items():
        if member_id in removed:
            continue
        entry = {"id": member_id, "topics": member.get("topics", [])}
        members.append(entry | ({"rack": member["rack"]} if member.get("rack") else {}))
    for new in asked.add:
        entry = {"id": new.id, "topics": new.topics if new.topics is not None else sorted(topics)}
        members.append(entry | ({"rack": new.rack} if new.rack else {}))
    options: dict[str, Any] = {"strategy": strategy}
    if asked.time_limit_ms is not None:
        options["time_limit_ms"] = asked.time_limit_ms
    problem: dict[str, Any] = {"topics": topics, "members": members, "options": options}
    racks = state.get("partition_racks")
    if racks:
        problem["partition_racks"] = {
            topic: per_partition + [[] for _ in range(topics[topic] - len(per_partition))]
            for topic, per_partition in racks.items()
        }
    lost = {m: held for m, held in state.get("lost", {}).items() if m not in removed}
    return problem, {**state, "lost": lost}


def _current(state: dict[str, Any]) -> Assignment:
    """Who owns what now: the current generation's assignment (the target while a cooperative
    hand-over is under way), with what is held for members in their grace."""
    owned: Assignment = dict(state.get("target") or state.get("assignment", {}))
    for member_id, held in state.get("lost", {}).items():
        owned[member_id] = held.get("owned", {})
    return owned


def _load(owned: dict[str, list[int]]) -> int:
    return sum(len(parts) for parts in owned.values())


def _figures(owned: Assignment, members: list[str], moves: int) -> Figures:
    loads = [_load(owned.get(m, {})) for m in members] or [0]
    total = sum(_load(parts) for parts in owned.values())
    return Figures(partitions=total, members=len(members), min_load=min(loads), max_load=max(loads), moves=moves)


def _compare(stored: StoredGroup, strategy: str, answer: bytes) -> WhatIfResponse:
    solution = json.loads(answer)
    current = _current(stored.state)
    stats = solution["stats"]
    proposed: Assignment = solution.get("target") or solution["assignment"]
    changes = []
    for member_id in sorted(set(current) | set(proposed)):
        before, after = current.get(member_id, {}), proposed.get(member_id, {})
        gained = sum(len(set(parts) - set(before.get(topic, []))) for topic, parts in after.items())
        lost = sum(len(set(parts) - set(after.get(topic, []))) for topic, parts in before.items())
        changes.append(MemberChange(id=member_id, now=_load(before), then=_load(after), gained=gained, lost=lost))
    changes.sort(key=lambda c: (-abs(c.then - c.now), -c.gained - c.lost, c.id))
    leaving = set(stored.state.get("leaving", []))
    return WhatIfResponse(
        group_id=stored.group_id,
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
