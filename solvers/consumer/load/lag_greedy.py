"""The `lag-greedy` baseline: what a load-aware assignor without stickiness does.

Units by weight, heaviest first (ties by topic group, then partition number), each to the
eligible member with the smallest normalized load W/c at that moment (ties: the lowest member id);
who owned what is ignored. It balances the bottleneck well and moves almost everything on any
change, which is what it is there to show.
"""

from __future__ import annotations

import heapq

import numpy as np

from stickyd.solvers.budget import TimeBudget
from stickyd.solvers.consumer.load.data import LoadData
from stickyd.solvers.consumer.load.heuristic import CHECK_EVERY, SCAN_FROM_SETS


def solve_lag_greedy(data: LoadData, budget: TimeBudget) -> list[np.ndarray]:
    owners = [np.full(g.weight.shape[1], -1, dtype=np.int64) for g in data.groups]
    order = sorted(
        ((-int(w), g, u) for g, group in enumerate(data.groups) for u, w in enumerate(group.min_weight().tolist())),
    )
    if len({id(g.eligible) for g in data.groups if g.weight.shape[1]}) >= SCAN_FROM_SETS:
        return _by_scan(data, owners, order, budget)
    capacity = data.capacity.tolist()
    load = [0] * data.member_count
    heaps: dict[int, list[tuple[float, int]]] = {}
    for step, (_, g, u) in enumerate(order):
        if step % CHECK_EVERY == CHECK_EVERY - 1:
            budget.check("the lag-greedy baseline")
        group = data.groups[g]
        heap = heaps.get(id(group.eligible))
        if heap is None:
            heap = heaps[id(group.eligible)] = [(0.0, m) for m in group.eligible.tolist()]
            heapq.heapify(heap)
        while heap[0][0] != load[heap[0][1]] / capacity[heap[0][1]]:
            m = heap[0][1]
            heapq.heapreplace(heap, (load[m] / capacity[m], m))  # its load rose through another group
        m = heap[0][1]
        row = 0 if len(group.weight) == 1 else int(np.flatnonzero(group.eligible == m)[0])
        load[m] += int(group.weight_for(row)[u])
        heapq.heapreplace(heap, (load[m] / capacity[m], m))
        owners[g][u] = m
    return owners


def _by_scan(
    data: LoadData, owners: list[np.ndarray], order: list[tuple[int, int, int]], budget: TimeBudget
) -> list[np.ndarray]:
    """The same dealing, the least normalized load found by one scan of the unit's eligible
    members in ascending order (the first on a tie): members in many eligible sets would keep
    every heap they sit in re-keying."""
    capacity = data.capacity.tolist()
    load = [0] * data.member_count
    normalized = np.zeros(data.member_count, dtype=np.float64)
    members = [np.sort(g.eligible) for g in data.groups]
    for step, (_, g, u) in enumerate(order):
        if step % CHECK_EVERY == CHECK_EVERY - 1:
            budget.check("the lag-greedy baseline")
        group, eligible = data.groups[g], members[g]
        m = int(eligible[np.argmin(normalized[eligible])])
        row = 0 if len(group.weight) == 1 else int(np.flatnonzero(group.eligible == m)[0])
        load[m] += int(group.weight_for(row)[u])
        normalized[m] = load[m] / capacity[m]
        owners[g][u] = m
    return owners
