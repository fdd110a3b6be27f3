"""From a Streams target to the contract's response: KIP-441 warm-ups, stats, balance."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.streams import (
    ClientAssignment,
    StreamsBalance,
    StreamsProblem,
    StreamsSolution,
    StreamsStats,
    TargetAssignment,
)
from models.streams_index import StreamsIndex
from solvers.streams_flow import StreamsTarget


@dataclass(frozen=True)
class StreamsOutcome:
    strategy: str
    solver: str
    optimal: bool
    fallback: bool
    warnings: tuple[str, ...] = ()


def balance_excess(index: StreamsIndex, target: StreamsTarget) -> dict[str, int]:
    """How far each kind of balance lies outside the capacity-weighted floor/ceil shares."""
    n = index.client_count

    def outside(counts: np.ndarray, bounds: tuple[np.ndarray, np.ndarray]) -> int:
        lo, hi = bounds
        return int(np.maximum(lo - counts, 0).sum() + np.maximum(counts - hi, 0).sum())

    active = np.bincount(target.active, minlength=n)
    stateful = np.bincount(target.active[index.stateful], minlength=n)
    stateful += np.bincount(target.standby[target.standby >= 0], minlength=n)
    per_sub = sum(
        outside(np.bincount(target.active[index.task_sub == s], minlength=n), index.subtopology_bounds(s))
        for s in range(len(index.subtopologies))
    )
    return {
        "active": outside(active, index.active_bounds()),
        "stateful": outside(stateful, index.stateful_bounds()),
        "subtopology": per_sub,
    }


def build_streams_solution(
    problem: StreamsProblem, index: StreamsIndex, target: StreamsTarget, outcome: StreamsOutcome, time_ms: float
) -> StreamsSolution:
    n = index.client_count
    running = target.active.copy()
    warmup_of = np.full(index.task_count, -1, dtype=np.int64)
    budget = problem.config.max_warmup_replicas
    load = np.bincount(target.active, minlength=n)
    for t in np.flatnonzero(index.stateful).tolist():
        owner = int(target.active[t])
        caught = index.caught_up[t]
        if owner in caught or not caught:
            continue  # caught up already, or nobody is: the target owner runs it now
        previous = int(index.prev_active[t])
        # KIP-441: keep it running where the state is warm, the previous owner where possible
        keeper = previous if previous in caught else min(caught, key=lambda j: (load[j], j))
        running[t] = keeper
        load[keeper] += 1
        load[owner] -= 1
        if budget > 0:
            warmup_of[t] = owner
            budget -= 1

    per_sub = np.bincount(index.task_sub, minlength=len(index.subtopologies)).tolist()
    names = np.array(
        [f"{sub}_{p}" for sub, count in zip(index.subtopologies, per_sub, strict=True) for p in range(count)],
        dtype=object,
    )
    tasks = np.arange(index.task_count, dtype=np.int64)
    held = target.standby >= 0
    standby_client = target.standby[held]
    standby_task = np.broadcast_to(tasks[:, None], target.standby.shape)[held]
    # a standby is not run where the client now runs that task as its active
    run = running[standby_task] != standby_client
    warm = warmup_of >= 0
    target_active = _by_client(names, n, target.active, tasks)
    target_standby = _by_client(names, n, standby_client, standby_task)
    running_active = _by_client(names, n, running, tasks)
    running_standby = _by_client(names, n, standby_client[run], standby_task[run])
    warmups = _by_client(names, n, warmup_of[warm], tasks[warm])
    target_map: dict[str, TargetAssignment] = {}
    running_map: dict[str, ClientAssignment] = {}
    for j, client in enumerate(index.clients):
        target_map[client] = TargetAssignment(active=target_active[j], standby=target_standby[j])
        running_map[client] = ClientAssignment(active=running_active[j], standby=running_standby[j], warmup=warmups[j])
    excess = balance_excess(index, target)
    warnings = list(index.warnings) + list(outcome.warnings)
    if any(excess.values()):
        warnings.append(
            "target is not 100% balanced (no assignment meets all three balances; total excess "
            f"over the shares: active {excess['active']}, stateful {excess['stateful']}, "
            f"per subtopology {excess['subtopology']})"
        )
    stats = StreamsStats(
        strategy=problem.options.strategy,
        solver=outcome.solver,
        optimal=outcome.optimal,
        fallback=outcome.fallback,
        active_moves=active_moves(index, target),
        standby_moves=standby_moves(index, target),
        warmups=int((warmup_of >= 0).sum()),
        balance=_balance(index, target),
        time_ms=round(time_ms, 3),
        warnings=warnings,
    )
    return StreamsSolution.model_construct(
        assignment=running_map,
        target=target_map,
        followup_rebalance=bool((running != target.active).any()),
        stats=stats,
    )


def _by_client(names: np.ndarray, n: int, client: np.ndarray, task: np.ndarray) -> list[list[str]]:
    """Per client j, the names of the tasks (sorted by id: by subtopology, then partition) of the
    pairs (client[i], task[i]) with client[i] == j."""
    order = np.lexsort((task, client))
    bounds = np.cumsum(np.bincount(client, minlength=n))[:-1] if len(client) else np.zeros(max(n - 1, 0), np.int64)
    return [part.tolist() for part in np.split(names[task[order]], bounds)]


def active_moves(index: StreamsIndex, target: StreamsTarget) -> int:
    """Stateful actives whose previous owner (still present) no longer runs them."""
    had = index.stateful & (index.prev_active >= 0)
    return int((had & (target.active != index.prev_active)).sum())


def standby_moves(index: StreamsIndex, target: StreamsTarget) -> int:
    """Previous standby replicas whose client no longer holds the task at all."""
    moves = 0
    for t in np.flatnonzero(index.stateful).tolist():
        holders = set(target.standby[t].tolist()) | {int(target.active[t])}
        moves += len(index.prev_standby[t] - holders)
    return moves


def _balance(index: StreamsIndex, target: StreamsTarget) -> StreamsBalance:
    n = index.client_count
    active = np.bincount(target.active, minlength=n)
    stateful = np.bincount(target.active[index.stateful], minlength=n)
    stateful = stateful + np.bincount(target.standby[target.standby >= 0], minlength=n)
    if len(set(index.capacity.tolist())) > 1:
        active = active - index.active_bounds()[0]
        stateful = stateful - index.stateful_bounds()[0]
    spread = 0
    for s in range(len(index.subtopologies)):
        counts = np.bincount(target.active[index.task_sub == s], minlength=n)
        spread = max(spread, int(counts.max() - counts.min()))
    return StreamsBalance(
        active=[int(active.min()), int(active.max())],
        stateful=[int(stateful.min()), int(stateful.max())],
        subtopology_spread=spread,
    )
