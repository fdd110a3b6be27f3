"""Streams baselines: KAFKA-10121's sorted round robin (`greedy`) and a sticky heuristic that is
also the time-limit fallback (`sticky`)."""

from __future__ import annotations

import numpy as np
from sortedcontainers import SortedList

from stickyd.models.streams.index import StreamsIndex
from stickyd.solvers.budget import TimeBudget
from stickyd.solvers.streams.flow import StreamsTarget

CHECK_EVERY = 1_024
"""loop iterations between two looks at the budget."""
HEURISTIC = "the streams sticky heuristic"


def solve_greedy(index: StreamsIndex) -> StreamsTarget:
    """KAFKA-10121's description of the 2.6 assignor, steps 1-5, exactly:
    1. members sorted by name; 2. tasks sorted by subtopology, then partition;
    3. stateful task t[i] to member m[i % members]; 4. standbys continue the loop over the
    members, skipping one that already has the task; 5. each stateless task to the member with
    the fewest tasks. (With unequal capacities, "fewest" is per thread; ties go to the member
    that sorts first.)"""
    n, r = index.client_count, index.replicas
    active = np.full(index.task_count, -1, dtype=np.int64)
    standby = np.full((index.task_count, r), -1, dtype=np.int64)
    stateful = np.flatnonzero(index.stateful)
    active[stateful] = np.arange(len(stateful)) % n
    cursor = len(stateful) % n
    for t in stateful.tolist():
        for k in range(r):
            while cursor == active[t] or cursor in standby[t, :k]:
                cursor = (cursor + 1) % n
            standby[t, k] = cursor
            cursor = (cursor + 1) % n
    tasks = np.bincount(active[stateful], minlength=n).astype(np.float64)
    for t in np.flatnonzero(~index.stateful).tolist():
        j = int(np.argmin(tasks / index.capacity))
        active[t] = j
        tasks[j] += 1
    return StreamsTarget(active=active, standby=standby)


def solve_sticky(index: StreamsIndex, budget: TimeBudget | None = None) -> StreamsTarget:
    """Previous active owner first, then a caught-up client, then the least loaded one, within
    each client's active share (so active balance always holds); standbys stay where they were
    while the client is within its stateful share, the rest go to the clients with the fewest
    stateful tasks. Per-subtopology and stateful balance are preferred, not guaranteed. With
    restore costs, the costliest tasks (and standbys) keep their clients first.
    `budget` is asked inside the loops (SolveTimeout once it is spent)."""
    budget = budget or TimeBudget(float("inf"))
    n = index.client_count
    lo, hi = index.active_bounds()
    load = np.zeros(n, dtype=np.int64)
    active = np.full(index.task_count, -1, dtype=np.int64)
    # the larger shares go to the clients that owned the most (they can keep more)
    owned = np.bincount(index.prev_active[index.prev_active >= 0], minlength=n)
    quota = lo.copy()
    spare = index.task_count - int(lo.sum())
    for j in np.lexsort((np.arange(n), -owned)).tolist():
        if spare and quota[j] < hi[j]:
            quota[j] += 1
            spare -= 1
    sub_count = np.zeros((len(index.subtopologies), n), dtype=np.int64)
    sub_hi = sub_count.copy()
    for s in range(len(index.subtopologies)):
        sub_hi[s] = index.subtopology_bounds(s)[1]

    def give(t: int, j: int) -> None:
        active[t] = j
        load[j] += 1
        sub_count[index.task_sub[t], j] += 1

    def room(t: int, j: int) -> bool:
        return bool(load[j] < quota[j] and sub_count[index.task_sub[t], j] < sub_hi[index.task_sub[t], j])

    # owners keep their tasks in an order rotated per owner, so the tasks a full owner sheds
    # come from different subtopologies (the newcomer then gets a spread, not one subtopology)
    n_subs = max(1, len(index.subtopologies))
    rotated = sorted(
        range(index.task_count),
        key=lambda t: ((int(index.task_sub[t]) + int(index.prev_active[t])) % n_subs, int(index.task_partition[t])),
    )
    if index.weighted:
        # restore costs weigh the moves: the costliest tasks stay first, the cheap ones are shed
        cost = index.move_cost.tolist()
        rotated.sort(key=lambda t: -cost[t] if index.stateful[t] else 0)
    budget.check(HEURISTIC)
    for i, t in enumerate(rotated):
        if i % CHECK_EVERY == 0:
            budget.check(HEURISTIC)
        owner = int(index.prev_active[t])
        if owner >= 0 and room(t, owner):
            give(t, owner)
    for i, t in enumerate(np.flatnonzero(active < 0).tolist()):
        if i % CHECK_EVERY == 0:
            budget.check(HEURISTIC)
        caught = index.caught_up[t] if index.stateful[t] else frozenset()
        for j in sorted(caught, key=lambda j: (load[j] / index.capacity[j], j)):
            if room(t, j):
                give(t, j)
                break
    by_load = SortedList((load[j] / index.capacity[j], j) for j in range(n))
    for i, t in enumerate(np.flatnonzero(active < 0).tolist()):
        if i % CHECK_EVERY == 0:
            budget.check(HEURISTIC)
        pick = next((j for _, j in by_load if room(t, j)), None)
        if pick is None:
            pick = next((j for _, j in by_load if load[j] < quota[j]), by_load[0][1])
        by_load.remove((load[pick] / index.capacity[pick], pick))
        give(t, pick)
        by_load.add((load[pick] / index.capacity[pick], pick))
    return StreamsTarget(active=active, standby=_sticky_standbys(index, active, budget))


def _sticky_standbys(index: StreamsIndex, active: np.ndarray, budget: TimeBudget) -> np.ndarray:
    """Previous standby clients keep their replica while within their stateful share; the rest
    go to the clients with the fewest stateful tasks per thread, another rack than the active's
    first (KIP-925)."""
    n, r = index.client_count, index.replicas
    standby = np.full((index.task_count, r), -1, dtype=np.int64)
    _, hi_sf = index.stateful_bounds()
    racks = [rack or "" for rack in index.racks]
    load = np.bincount(active[index.stateful], minlength=n)
    by_load = SortedList((load[j] / index.capacity[j], j) for j in range(n))

    def add(j: int) -> None:
        by_load.remove((load[j] / index.capacity[j], j))
        load[j] += 1
        by_load.add((load[j] / index.capacity[j], j))

    stateful = np.flatnonzero(index.stateful)
    if index.weighted:
        # restore costs weigh the moves: the costliest standbys keep their clients first
        stateful = stateful[np.argsort(-index.move_cost[stateful], kind="stable")]
    for i, t in enumerate(stateful.tolist()):
        if i % CHECK_EVERY == 0:
            budget.check(HEURISTIC)
        owner = int(active[t])
        chosen = [j for j in sorted(index.prev_standby[t]) if j != owner and load[j] < hi_sf[j]][:r]
        for j in chosen:
            add(j)
        while len(chosen) < r:
            free = [j for _, j in by_load.islice(0, len(chosen) + 2 + r) if j != owner and j not in chosen]
            if len(free) < r - len(chosen):
                free = [j for _, j in by_load if j != owner and j not in chosen]
            other_rack = [j for j in free if not racks[owner] or racks[j] != racks[owner]]
            pick = (other_rack or free)[0]
            chosen.append(pick)
            add(pick)
        standby[t] = sorted(chosen)
    return standby
