"""The one definition of a correct Streams answer: `validate_streams_solution`."""

from __future__ import annotations

import numpy as np

from stickyd.models.streams.index import StreamsIndex, index_streams_problem
from stickyd.models.streams.problem import StreamsProblem, StreamsSolution


def target_violations(index: StreamsIndex, active: np.ndarray, standby: np.ndarray) -> list[str]:
    """A target as arrays: one active per task on a real client; every stateful task exactly
    `replicas` standbys on distinct clients other than its active; stateless tasks none."""
    out: list[str] = []
    n = index.client_count
    if len(active) != index.task_count or ((active < 0) | (active >= n)).any():
        return ["target: some task has no active client"]
    if standby.shape != (index.task_count, index.replicas):
        return [f"target: standbys shaped {standby.shape}, expected ({index.task_count}, {index.replicas})"]
    stateful, stateless = standby[index.stateful], standby[~index.stateful]
    if (stateless != -1).any():
        out.append("target: a stateless task has a standby")
    if ((stateful < 0) | (stateful >= n)).any():
        out.append("target: a stateful task lacks a standby replica")
    elif index.replicas:
        rows = np.sort(stateful, axis=1)
        if (rows[:, 1:] == rows[:, :-1]).any():
            out.append("target: two standbys of one task on one client")
        if (stateful == active[index.stateful][:, None]).any():
            out.append("target: a standby beside its own active")
    return out


def validate_streams_solution(problem: StreamsProblem, solution: StreamsSolution) -> list[str]:
    """Everything wrong with `solution` as an answer to `problem`; empty when valid."""
    index = index_streams_problem(problem)
    ids = {name: t for t, name in enumerate(index.task_name(t) for t in range(index.task_count))}
    position = {c: j for j, c in enumerate(index.clients)}
    out: list[str] = []
    for name, mapping in (("target", solution.target), ("assignment", solution.assignment)):
        if set(mapping) != set(position):
            return [f"{name}: clients missing or unknown"]
    active = np.full(index.task_count, -1, dtype=np.int64)
    replicas: list[list[int]] = [[] for _ in range(index.task_count)]
    for client, parts in solution.target.items():
        for role, tasks in (("active", parts.active), ("standby", parts.standby)):
            if tasks != sorted(tasks, key=lambda x: ids.get(x, -1)) or len(set(tasks)) != len(tasks):
                out.append(f"target.{client}.{role}: not sorted or has duplicates")
            for task in tasks:
                t = ids.get(task)
                if t is None:
                    out.append(f"target.{client}.{role}: unknown task {task}")
                elif role == "active":
                    if active[t] >= 0:
                        out.append(f"target: {task} active on two clients")
                    active[t] = position[client]
                else:
                    replicas[t].append(position[client])
    if out:
        return out
    standby = np.full((index.task_count, index.replicas), -1, dtype=np.int64)
    for t, holders in enumerate(replicas):
        if len(holders) != (index.replicas if index.stateful[t] else 0):
            out.append(f"target: {index.task_name(t)} has {len(holders)} standbys")
        else:
            standby[t, : len(holders)] = holders
    out += target_violations(index, active, standby)
    if out:
        return out
    out += _check_stats(index, solution, active, standby)
    out += _check_running(problem, index, solution, active, ids, position)
    return out


def _check_running(
    problem: StreamsProblem,
    index: StreamsIndex,
    solution: StreamsSolution,
    target: np.ndarray,
    ids: dict[str, int],
    position: dict[str, int],
) -> list[str]:
    """KIP-441: what runs now differs from the target only to keep warm state running."""
    out: list[str] = []
    running = np.full(index.task_count, -1, dtype=np.int64)
    warmups = 0
    for client, parts in solution.assignment.items():
        j = position[client]
        for role, tasks in (("active", parts.active), ("standby", parts.standby), ("warmup", parts.warmup)):
            if tasks != sorted(tasks, key=lambda x: ids.get(x, -1)) or len(set(tasks)) != len(tasks):
                out.append(f"assignment.{client}.{role}: not sorted or has duplicates")
            unknown = [task for task in tasks if task not in ids]
            if unknown:
                out.append(f"assignment.{client}.{role}: unknown task {unknown[0]}")
        for task in parts.active:
            t = ids.get(task)
            if t is None:
                continue
            if running[t] >= 0:
                out.append(f"assignment: {task} active on two clients")
            running[t] = j
        for task in parts.warmup:
            warmups += 1
            if task in ids and target[ids[task]] != j:
                out.append(f"assignment.{client}.warmup: {task} warms up where it is not targeted")
        target_standby = set(solution.target[client].standby)
        if set(parts.standby) != target_standby - set(parts.active):
            out.append(f"assignment.{client}.standby: differs from the target's standbys")
    if (running < 0).any():
        return out + ["assignment: some task runs nowhere"]
    for t in np.flatnonzero(running != target).tolist():
        caught = index.caught_up[t]
        if not index.stateful[t] or target[t] in caught or running[t] not in caught:
            out.append(f"assignment: {index.task_name(t)} kept off its target without a warm-state reason")
    if warmups > problem.config.max_warmup_replicas:
        out.append(f"assignment: {warmups} warm-ups exceed max_warmup_replicas")
    if solution.followup_rebalance != bool((running != target).any()):
        out.append("followup_rebalance: must be true exactly while assignment differs from target")
    if solution.stats.warmups != warmups:
        out.append(f"stats.warmups: says {solution.stats.warmups}, the assignment has {warmups}")
    return out


def _check_stats(index: StreamsIndex, solution: StreamsSolution, active: np.ndarray, standby: np.ndarray) -> list[str]:
    """The stats tell the truth about the target: moves, balance, and no optimal fallback."""
    stats = solution.stats
    n = index.client_count
    had = index.stateful & (index.prev_active >= 0)
    cost = index.move_cost.tolist()
    moved_standbys = moved_standby_cost = 0
    for t in np.flatnonzero(index.stateful).tolist():
        holders = set(standby[t].tolist()) | {int(active[t])}
        moved = len(index.prev_standby[t] - holders)
        moved_standbys += moved
        moved_standby_cost += moved * cost[t]
    moved_active_cost = sum(cost[t] for t in np.flatnonzero(had & (active != index.prev_active)).tolist())
    counts = np.bincount(active, minlength=n)
    stateful = np.bincount(active[index.stateful], minlength=n) + np.bincount(standby[standby >= 0], minlength=n)
    if len(set(index.capacity.tolist())) > 1:
        counts = counts - index.active_bounds()[0]
        stateful = stateful - index.stateful_bounds()[0]
    spread = 0
    for s in range(len(index.subtopologies)):
        per_client = np.bincount(active[index.task_sub == s], minlength=n)
        spread = max(spread, int(per_client.max() - per_client.min()))
    truth: dict[str, object] = {
        "active_moves": int((had & (active != index.prev_active)).sum()),
        "standby_moves": moved_standbys,
        "balance.active": [int(counts.min()), int(counts.max())],
        "balance.stateful": [int(stateful.min()), int(stateful.max())],
        "balance.subtopology_spread": spread,
        # stickiness restore_cost: the moves' summed task_costs (absent otherwise)
        "active_move_cost": moved_active_cost if index.weighted else None,
        "standby_move_cost": moved_standby_cost if index.weighted else None,
    }
    said: dict[str, object] = {
        "active_moves": stats.active_moves,
        "standby_moves": stats.standby_moves,
        "balance.active": list(stats.balance.active),
        "balance.stateful": list(stats.balance.stateful),
        "balance.subtopology_spread": stats.balance.subtopology_spread,
        "active_move_cost": stats.active_move_cost,
        "standby_move_cost": stats.standby_move_cost,
    }
    out = [
        f"stats.{name}: says {said[name]}, the target has {value}"
        for name, value in truth.items()
        if said[name] != value
    ]
    if stats.optimal and stats.fallback:
        out.append("stats: a fallback answer cannot be optimal")
    return out
