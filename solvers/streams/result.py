"""From a Streams target to the contract's response: KIP-441 warm-ups, stats, balance."""

from __future__ import annotations

import numpy as np
import orjson

from stickyd.models.streams.index import StreamsIndex
from stickyd.models.streams.problem import (
    ClientAssignment,
    StreamsBalance,
    StreamsProblem,
    StreamsSolution,
    StreamsStats,
    TargetAssignment,
)
from stickyd.solvers.outcome import Outcome
from stickyd.solvers.streams.flow import StreamsTarget


def balance_excess(index: StreamsIndex, target: StreamsTarget) -> dict[str, int]:
    """How far each kind of balance lies outside the capacity-weighted floor/ceil shares."""
    n = index.client_count

    def outside(counts: np.ndarray, bounds: tuple[np.ndarray, np.ndarray]) -> int:
        lo, hi = bounds
        return int(np.maximum(lo - counts, 0).sum() + np.maximum(counts - hi, 0).sum())

    active = np.bincount(target.active, minlength=n)
    stateful = np.bincount(target.active[index.stateful], minlength=n)
    stateful += np.bincount(target.standby[target.standby >= 0], minlength=n)
    per_sub = outside(per_subtopology_counts(index, target.active), index.all_subtopology_bounds())
    return {
        "active": outside(active, index.active_bounds()),
        "stateful": outside(stateful, index.stateful_bounds()),
        "subtopology": per_sub,
    }


def per_subtopology_counts(index: StreamsIndex, active: np.ndarray) -> np.ndarray:
    """per (subtopology, client): the active tasks of the subtopology on the client."""
    n, n_subs = index.client_count, len(index.subtopologies)
    return np.bincount(index.task_sub * n + active, minlength=n_subs * n).reshape(n_subs, n)


def build_streams_solution(
    problem: StreamsProblem, index: StreamsIndex, target: StreamsTarget, outcome: Outcome, time_ms: float
) -> StreamsSolution:
    n = index.client_count
    running = target.active.copy()
    warmup_of = np.full(index.task_count, -1, dtype=np.int64)
    budget = problem.config.max_warmup_replicas
    load = np.bincount(target.active, minlength=n)
    tasks = np.arange(index.task_count, dtype=np.int64)
    # stateful tasks whose target owner is not caught up while someone is (the others: the target
    # owner runs them now)
    anyone = np.zeros(index.task_count, dtype=bool)
    anyone[index.caught_up_pairs[:, 0]] = True
    waiting = np.flatnonzero(index.stateful & anyone & ~index.is_caught_up(tasks, target.active))
    for t, caught in zip(waiting.tolist(), index.caught_up_clients(waiting), strict=True):
        owner = int(target.active[t])
        previous = int(index.prev_active[t])
        # KIP-441: keep it running where the state is warm, the previous owner where possible
        keeper = previous if previous in caught else min(caught, key=lambda j: (load[j], j))
        running[t] = keeper
        load[keeper] += 1
        load[owner] -= 1
        if budget > 0:
            warmup_of[t] = owner
            budget -= 1

    names = index.names
    held = target.standby >= 0
    standby_client = target.standby[held]
    standby_task = np.broadcast_to(tasks[:, None], target.standby.shape)[held]
    # a standby is not run where the client now runs that task as its active
    run = running[standby_task] != standby_client
    warm = warmup_of >= 0
    target_active = _by_client(names, n, target.active, tasks)
    target_standby = _by_client(names, n, standby_client, standby_task)
    # what runs now differs from the target only around the tasks kept warm elsewhere (KIP-441):
    # the other clients share the target's lists
    moved = np.flatnonzero(running != target.active)
    touched = np.concatenate([running[moved], target.active[moved]])
    running_active = _with_clients_redone(names, n, target_active, running, tasks, touched)
    running_standby = _with_clients_redone(
        names, n, target_standby, standby_client[run], standby_task[run], standby_client[~run]
    )
    warmups = _by_client(names, n, warmup_of[warm], tasks[warm])
    target_map: dict[str, TargetAssignment] = {}
    running_map: dict[str, ClientAssignment] = {}
    for j, client in enumerate(index.clients):
        # (lists of task names built here: nothing to validate)
        target_map[client] = TargetAssignment.model_construct(active=target_active[j], standby=target_standby[j])
        running_map[client] = ClientAssignment.model_construct(
            active=running_active[j], standby=running_standby[j], warmup=warmups[j]
        )
    stats = _stats(problem, index, target, outcome, int((warmup_of >= 0).sum()), time_ms)
    return StreamsSolution.model_construct(
        assignment=running_map,
        target=target_map,
        followup_rebalance=bool((running != target.active).any()),
        stats=stats,
    )


def _stats(
    problem: StreamsProblem, index: StreamsIndex, target: StreamsTarget, outcome: Outcome, warmups: int, time_ms: float
) -> StreamsStats:
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
        # the restore-cost figures only where they were asked for
        active_move_cost=active_move_cost(index, target) if index.weighted else None,
        standby_move_cost=standby_move_cost(index, target) if index.weighted else None,
        warmups=warmups,
        balance=_balance(index, target),
        time_ms=round(time_ms, 3),
        warnings=warnings,
    )
    stats._fallback_cause = outcome.fallback_cause
    return stats


def _by_client(names: tuple[str, ...], n: int, client: np.ndarray, task: np.ndarray) -> list[list[str]]:
    """Per client j, the names of the tasks (sorted by id: by subtopology, then partition) of the
    pairs (client[i], task[i]) with client[i] == j."""
    order = np.lexsort((task, client))
    ends = np.cumsum(np.bincount(client, minlength=n)).tolist() if len(client) else [0] * n
    ordered = list(map(names.__getitem__, task[order].tolist()))
    return [ordered[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]


def _with_clients_redone(
    names: tuple[str, ...], n: int, lists: list[list[str]], client: np.ndarray, task: np.ndarray, touched: np.ndarray
) -> list[list[str]]:
    """`_by_client(names, n, client, task)` where the pairs differ from those `lists` were built
    from only on the clients in `touched`: those clients' lists are built anew, the others shared."""
    if not len(touched):
        return lists
    redo = np.unique(touched)
    fresh = np.isin(client, redo)
    redone = _by_client(names, n, client[fresh], task[fresh])
    out = list(lists)
    for j in redo.tolist():
        out[j] = redone[j]
    return out


def streams_answer_json(solution: StreamsSolution) -> bytes:
    """`solution.model_dump_json()`, byte for byte, written by orjson from the answer's lists
    (pydantic's serialiser walks every task name: 0.1 s at 200k tasks)."""
    plain = {
        "assignment": {
            client: {"active": parts.active, "standby": parts.standby, "warmup": parts.warmup}
            for client, parts in solution.assignment.items()
        },
        "target": {
            client: {"active": parts.active, "standby": parts.standby} for client, parts in solution.target.items()
        },
        "followup_rebalance": solution.followup_rebalance,
        "stats": solution.stats.model_dump(),
    }
    return orjson.dumps(plain)


def active_moves(index: StreamsIndex, target: StreamsTarget) -> int:
    """Stateful actives whose previous owner (still present) no longer runs them."""
    had = index.stateful & (index.prev_active >= 0)
    return int((had & (target.active != index.prev_active)).sum())


def active_move_cost(index: StreamsIndex, target: StreamsTarget) -> int:
    """The active level's figure: active moves, or (restore_cost) their summed costs."""
    had = index.stateful & (index.prev_active >= 0)
    return index.cost_of(had & (target.active != index.prev_active))


def standby_moves(index: StreamsIndex, target: StreamsTarget) -> int:
    """Previous standby replicas (of stateful tasks) whose client no longer holds the task at all."""
    return len(_moved_standby_tasks(index, target))


def standby_move_cost(index: StreamsIndex, target: StreamsTarget) -> int:
    """The standby level's figure: standby moves, or (restore_cost) their summed costs."""
    return index.cost_of(_moved_standby_tasks(index, target))


def _moved_standby_tasks(index: StreamsIndex, target: StreamsTarget) -> np.ndarray:
    """per moved previous standby replica: its task."""
    pairs = index.standby_pairs[index.stateful[index.standby_pairs[:, 0]]]
    tasks, clients = pairs[:, 0], pairs[:, 1]
    kept = (target.active[tasks] == clients) | (target.standby[tasks] == clients[:, None]).any(axis=1)
    return tasks[~kept]


def _balance(index: StreamsIndex, target: StreamsTarget) -> StreamsBalance:
    n = index.client_count
    active = np.bincount(target.active, minlength=n)
    stateful = np.bincount(target.active[index.stateful], minlength=n)
    stateful = stateful + np.bincount(target.standby[target.standby >= 0], minlength=n)
    if len(set(index.capacity.tolist())) > 1:
        active = active - index.active_bounds()[0]
        stateful = stateful - index.stateful_bounds()[0]
    per_sub = per_subtopology_counts(index, target.active)
    spread = int((per_sub.max(axis=1) - per_sub.min(axis=1)).max()) if len(per_sub) else 0
    return StreamsBalance(
        active=[int(active.min()), int(active.max())],
        stateful=[int(stateful.min()), int(stateful.max())],
        subtopology_spread=spread,
    )
