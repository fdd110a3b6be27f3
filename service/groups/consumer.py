"""A consumer group's rebalance with memory: the stored assignment filled in as `owned`, lost
members held for their grace, leaving members drained. `options` (`balance`, `load_tolerance`),
`partition_weights` and members' `capacity` go to the solve as the caller sent them.

- A member whose `owned` is left out owns what the last generation gave it (a member returning
  within its grace: what was held for it), at that generation.
- A member held in grace takes part in the solve under its own id with its last subscription,
  capacity and partitions, so it keeps them (balance permitting); what it gets is reported as `held` and given
  to nobody else this round.
- A leaving member is solved with no subscription: it gets nothing new, and what it owns goes to
  others (under the cooperative protocol the solver revokes it first and hands it over in the
  follow-up round).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from stickyd.service.groups.roster import Roster, build_roster, member_ids


@dataclass
class ConsumerRound:
    problem: dict[str, Any]
    """what the solver gets."""
    roster: Roster
    subscriptions: dict[str, dict[str, Any]]
    """this round's members as the caller sent them: id -> {topics, rack}."""


def prepare_consumer(
    problem: dict[str, Any], state: dict[str, Any], generation: int, leaving: list[str], grace_ms: int, now: float
) -> ConsumerRound:
    roster = build_roster(state, member_ids(problem.get("members")), leaving, grace_ms, now)
    solve = copy.copy(problem)
    assignment: dict[str, Any] = state.get("assignment", {})
    lost: dict[str, Any] = state.get("lost", {})
    members: list[Any] = []
    subscriptions: dict[str, dict[str, Any]] = {}
    for entry in problem.get("members") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            members.append(entry)
            continue
        member = dict(entry)
        subscriptions[member["id"]] = _subscription(member)
        if "owned" not in member:
            owned = lost[member["id"]]["owned"] if member["id"] in lost else assignment.get(member["id"])
            if owned:
                member["owned"] = owned
                member.setdefault("generation", generation)
        if member["id"] in roster.leaving:
            member["topics"] = []
        members.append(member)
    for member_id, held in roster.held.items():
        phantom: dict[str, Any] = {"id": member_id, "topics": held["member"].get("topics", [])}
        for key in ("rack", "capacity"):
            if held["member"].get(key) is not None:
                phantom[key] = held["member"][key]
        if held["owned"]:
            phantom |= {"owned": held["owned"], "generation": generation}
        members.append(phantom)
    if isinstance(problem.get("members"), list):
        solve["members"] = members
    return ConsumerRound(problem=solve, roster=roster, subscriptions=subscriptions)


def _subscription(member: dict[str, Any]) -> dict[str, Any]:
    """What is remembered of a member: its topics and rack, and its capacity when it gave one
    (a member held in grace is solved with it, so balance `load` weighs it as before)."""
    kept = {"topics": member.get("topics", []), "rack": member.get("rack")}
    if member.get("capacity") is not None:
        kept["capacity"] = member["capacity"]
    return kept


def finish_consumer(
    round_: ConsumerRound, solution: dict[str, Any], now: float
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(the caller's solution, the state to store, the report: newcomers, leaving, held)."""
    roster = round_.roster
    held_now: dict[str, dict[str, Any]] = {}
    for member_id, held in roster.held.items():
        got = solution["assignment"].pop(member_id, {})
        solution["revoke"].pop(member_id, None)
        if solution.get("target") is not None:
            solution["target"].pop(member_id, None)
        held_now[member_id] = {**held, "owned": got}
    revoke = solution.get("revoke", {})
    leaving = [
        {"id": m, "empty": not any(solution["assignment"].get(m, {}).values()) and not any(revoke.get(m, {}).values())}
        for m in roster.leaving
    ]
    state = {
        "members": round_.subscriptions,
        "assignment": solution["assignment"],
        "target": solution.get("target"),
        "leaving": roster.leaving,
        "lost": held_now,
        "stats": solution["stats"],
        "topics": round_.problem.get("topics", {}),
    }
    if round_.problem.get("partition_racks"):
        state["partition_racks"] = round_.problem["partition_racks"]  # what explain says about racks
    return solution, state, roster.report(leaving, held_now)
