"""The two tie-breaks below the Streams levels, on the stateless tasks of a target.

Once the stateful actives and the standbys are placed (every level of docs/wire-format.md's
Streams assignment is decided by them), the stateless tasks only fill each client's active share
and their subtopology's shares. Among those fillings this picks, by one small min-cost flow:

1. **Stateless tasks stay put**: the fewest stateless actives whose owner changes (moving one
   costs a revocation and a pause, if no restore).
2. **No idle client**: the fewest clients without any active task, where the shares allow a
   stateless task on a client that runs no stateful active (Kafka's own Streams assignors give
   every instance work when they can).

Both are exact given the target's stateful part, not over every target: tie-breaks, not proven
levels. A target that is already best on both is returned as it is.
"""

from __future__ import annotations

import numpy as np

from stickyd.models.streams.index import StreamsIndex
from stickyd.solvers.flows.network import FlowNetwork
from stickyd.solvers.streams.flow import StreamsTarget
from stickyd.solvers.streams.result import per_subtopology_counts


def settle_stateless(index: StreamsIndex, target: StreamsTarget) -> StreamsTarget:
    """`target` with its stateless actives re-placed: fewest moved, then fewest idle clients."""
    stateless = np.flatnonzero(~index.stateful)
    if not len(stateless):
        return target
    n = index.client_count
    running = np.bincount(target.active[index.stateful], minlength=n)
    lo_a, hi_a = index.active_bounds()
    room_lo, room_hi = np.maximum(lo_a - running, 0), hi_a - running
    subs = np.unique(index.task_sub[stateless]).tolist()
    lo_s, hi_s = index.all_subtopology_bounds()
    counts = per_subtopology_counts(index, target.active)
    placed = np.bincount(target.active[stateless], minlength=n)
    # only a target within every share is re-placed (the flows' always are)
    if (room_hi < room_lo).any() or (placed < room_lo).any() or (placed > room_hi).any():
        return target
    if any(((counts[s] < lo_s[s]) | (counts[s] > hi_s[s])).any() for s in subs):
        return target
    classes: dict[tuple[int, int], list[int]] = {}
    for t in stateless.tolist():
        classes.setdefault((int(index.task_sub[t]), int(index.prev_active[t])), []).append(t)
    move = n + 1  # one stateless move outweighs every idle client
    net = FlowNetwork()
    class0 = net.add_nodes(len(classes))
    pool0 = net.add_nodes(len(subs))
    sub_client0 = net.add_nodes(len(subs) * n)
    client_in0, client_out0, sink = net.add_nodes(n), net.add_nodes(n), net.add_nodes(1)
    at = {s: i for i, s in enumerate(subs)}
    clients = np.arange(n)
    stay_rows: list[slice | None] = []
    for c, ((s, owner), tasks) in enumerate(classes.items()):
        net.supply(class0 + c, len(tasks))
        # a task stays with its previous owner, or goes through its subtopology's pool (a move)
        stay = owner >= 0
        stay_rows.append(net.add_arcs(class0 + c, sub_client0 + at[s] * n + owner, len(tasks), 0) if stay else None)
        net.add_arcs(class0 + c, pool0 + at[s], len(tasks), move if stay else 0)
    pool_rows = []
    for s in subs:
        pool_rows.append(net.add_arcs(pool0 + at[s], sub_client0 + at[s] * n + clients, hi_s[s], 0))
        # task parallel balance: each client runs its share of the subtopology's tasks
        net.add_arcs(sub_client0 + at[s] * n + clients, client_in0 + clients, hi_s[s], 0, lower=lo_s[s])
    # active balance: the stateless tasks fill what the stateful actives leave of each share
    net.add_arcs(client_in0 + clients, client_out0 + clients, room_hi, 0, lower=room_lo)
    # a client that runs no stateful active is not idle once it runs one stateless task
    idle = (running == 0) & (room_hi > 0)
    net.add_arcs(client_out0 + clients, sink, idle.astype(np.int64), -1)
    net.add_arcs(client_out0 + clients, sink, room_hi - idle, 0)
    net.supply(sink, -len(stateless))
    flows = net.solve()
    cost = int(flows @ net.costs())
    if cost >= _cost_of(index, target, classes, move, idle):
        return target
    return StreamsTarget(
        active=_dealt(index, target, classes, stay_rows, pool_rows, subs, flows), standby=target.standby
    )


def _cost_of(
    index: StreamsIndex, target: StreamsTarget, classes: dict[tuple[int, int], list[int]], move: int, idle: np.ndarray
) -> int:
    """The flow's objective for the target's own stateless placement."""
    moved = sum(1 for (_, owner), tasks in classes.items() if owner >= 0 for t in tasks if target.active[t] != owner)
    busy = np.bincount(target.active[~index.stateful], minlength=index.client_count) > 0
    return moved * move - int((idle & busy).sum())


def _dealt(
    index: StreamsIndex,
    target: StreamsTarget,
    classes: dict[tuple[int, int], list[int]],
    stay_rows: list[slice | None],
    pool_rows: list[slice],
    subs: list[int],
    flows: np.ndarray,
) -> np.ndarray:
    """The flow's counts as tasks: a class's staying tasks keep their owner, the pooled ones go
    to the clients their subtopology's pool sends them to, where the target had them if it can."""
    active = target.active.copy()
    pooled: dict[int, list[int]] = {s: [] for s in subs}
    for (s, owner), tasks, stay in zip(classes, classes.values(), stay_rows, strict=True):
        kept = int(flows[stay][0]) if stay is not None else 0
        # the tasks the target left with their owner stay first
        ordered = sorted(tasks, key=lambda t: (int(target.active[t]) != owner, t))
        active[ordered[:kept]] = owner
        pooled[s] += ordered[kept:]
    for s, arcs in zip(subs, pool_rows, strict=True):
        left = flows[arcs].copy()
        rest = []
        for t in sorted(pooled[s]):
            j = int(target.active[t])
            if left[j] > 0:
                left[j] -= 1
                active[t] = j
            else:
                rest.append(t)
        active[rest] = np.repeat(np.arange(index.client_count), left)
    return active
