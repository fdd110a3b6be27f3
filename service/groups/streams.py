"""A Streams application's rebalance with memory: stored tasks filled in as `active`/`standby`,
lost clients held for their grace, leaving clients drained through KIP-441 warm-ups.

- A client whose `active` (or `standby`) is left out runs what the last generation gave it
  (its warm-ups count as standbys: it holds their state); a client returning within its grace
  gets what was held for it.
- A client held in grace takes part in the solve with its last capacity and tasks; what it gets
  is reported as `held` and run by nobody else this round.
- A leaving client is left out of the solve, so the target gives it nothing. A stateful task it
  runs keeps running there while the client the solve picked is not caught up on it (lag over
  `acceptable_recovery_lag`); that client gets a warm-up replica of it instead (within
  `max_warmup_replicas`), and the task moves in a later round once its lag says it is caught up.
  The client is empty (safe to stop) once it runs nothing.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from stickyd.models.streams.index import subtopology_key
from stickyd.models.streams.problem import parse_task
from stickyd.service.groups.roster import Roster, RosterError, build_roster, member_ids

DEFAULT_ACCEPTABLE_RECOVERY_LAG = 10_000
DEFAULT_MAX_WARMUP_REPLICAS = 2


@dataclass
class StreamsRound:
    problem: dict[str, Any]
    """what the solver gets (leaving clients left out, held clients added)."""
    roster: Roster
    clients: dict[str, dict[str, Any]]
    """this round's clients as filled in: id -> the client's request entry."""


def task_order(name: str) -> tuple[tuple[int, int | str], int]:
    parsed = parse_task(name)
    return (subtopology_key(parsed[0]), parsed[1]) if parsed else ((2, name), 0)


def prepare_streams(
    problem: dict[str, Any], state: dict[str, Any], leaving: list[str], grace_ms: int, now: float
) -> StreamsRound:
    roster = build_roster(state, member_ids(problem.get("clients")), leaving, grace_ms, now)
    if roster.present and set(roster.leaving) == set(roster.present):
        raise RosterError("leaving", "every client of the group is leaving; at least one must stay to take the tasks")
    assignment: dict[str, Any] = state.get("assignment", {})
    lost: dict[str, Any] = state.get("lost", {})
    solve = copy.copy(problem)
    clients: list[Any] = []
    filled: dict[str, dict[str, Any]] = {}
    for entry in problem.get("clients") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            clients.append(entry)
            continue
        client = dict(entry)
        last = lost[client["id"]]["owned"] if client["id"] in lost else assignment.get(client["id"], {})
        if "active" not in client and last.get("active"):
            client["active"] = last["active"]
        if "standby" not in client and (last.get("standby") or last.get("warmup")):
            client["standby"] = sorted({*last.get("standby", []), *last.get("warmup", [])}, key=task_order)
        filled[client["id"]] = client
        if client["id"] not in roster.leaving:
            clients.append(client)
    for client_id, held in roster.held.items():
        phantom: dict[str, Any] = {"id": client_id, **held["member"]}
        owned = held["owned"]
        if owned.get("active"):
            phantom["active"] = owned["active"]
        if owned.get("standby") or owned.get("warmup"):
            phantom["standby"] = sorted({*owned.get("standby", []), *owned.get("warmup", [])}, key=task_order)
        clients.append(phantom)
    if isinstance(problem.get("clients"), list):
        solve["clients"] = clients
    return StreamsRound(problem=solve, roster=roster, clients=filled)


def finish_streams(
    round_: StreamsRound, solution: dict[str, Any], now: float
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(the caller's solution, the state to store, the report: newcomers, leaving, held)."""
    roster = round_.roster
    held_now: dict[str, dict[str, Any]] = {}
    for client_id, held in roster.held.items():
        got = solution["assignment"].pop(client_id, {"active": [], "standby": [], "warmup": []})
        solution["target"].pop(client_id, None)
        held_now[client_id] = {**held, "owned": got}
    _drain_leaving(round_, solution)
    leaving = [{"id": c, "empty": not solution["assignment"][c]["active"]} for c in roster.leaving]
    state = {
        "members": {
            c: {k: v for k, v in round_.clients[c].items() if k in ("capacity", "rack")} for c in roster.present
        },
        "assignment": solution["assignment"],
        "target": solution["target"],
        "leaving": roster.leaving,
        "lost": held_now,
        "stats": solution["stats"],
        "subtopologies": round_.problem.get("subtopologies", []),
    }
    if round_.problem.get("config"):
        state["config"] = round_.problem["config"]  # what a what-if solves with
    return solution, state, roster.report(leaving, held_now)


def _drain_leaving(round_: StreamsRound, solution: dict[str, Any]) -> None:
    """Leaving clients keep running the stateful tasks whose new owner is not caught up yet."""
    problem = round_.problem
    config = problem.get("config") or {}
    acceptable = config.get("acceptable_recovery_lag", DEFAULT_ACCEPTABLE_RECOVERY_LAG)
    budget = config.get("max_warmup_replicas", DEFAULT_MAX_WARMUP_REPLICAS)
    stateful = {s["id"]: s.get("stateful", True) for s in problem.get("subtopologies", [])}
    assignment = solution["assignment"]
    runner = {task: client for client, tasks in assignment.items() for task in tasks["active"]}
    warmups = sum(len(tasks.get("warmup", [])) for tasks in assignment.values())
    kept_any = False
    for client_id in round_.roster.leaving:
        kept: list[str] = []
        for task in round_.clients[client_id].get("active", []):
            parsed = parse_task(task)
            new_owner = runner.get(task)
            if parsed is None or new_owner is None or not stateful.get(parsed[0], False):
                continue
            lag = round_.clients[new_owner].get("lags", {}).get(task) if new_owner in round_.clients else None
            if lag is not None and lag <= acceptable:
                continue  # caught up: it moves now
            kept.append(task)
            tasks = assignment[new_owner]
            tasks["active"].remove(task)
            runner[task] = client_id
            if warmups < budget and task not in tasks["warmup"]:
                tasks["warmup"] = sorted([*tasks["warmup"], task], key=task_order)
                tasks["standby"] = [t for t in tasks["standby"] if t != task]
                warmups += 1
        assignment[client_id] = {"active": sorted(kept, key=task_order), "standby": [], "warmup": []}
        solution["target"][client_id] = {"active": [], "standby": []}
        kept_any = kept_any or bool(kept)
    if round_.roster.leaving:
        solution["assignment"] = dict(sorted(assignment.items()))
        solution["target"] = dict(sorted(solution["target"].items()))
        stats = solution["stats"]
        stats["warmups"] = warmups
        stats["warnings"].append(
            f"leaving clients {', '.join(round_.roster.leaving)}: no new tasks; "
            "stateful actives stay until their new owner is caught up"
        )
    solution["followup_rebalance"] = solution["followup_rebalance"] or kept_any
