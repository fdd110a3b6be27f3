"""Standby counts from the Streams standby flow (solvers/streams/flow.py) turned into replicas:
per class straight from its arcs, or per owner's pool dealt out so that no task gets a client
twice (greedily, largest remaining need first; else by an exact max flow)."""

from __future__ import annotations

import heapq

import numpy as np
from ortools.graph.python import max_flow

from stickyd.models.streams.index import StreamsIndex
from stickyd.solvers.budget import TimeBudget
from stickyd.solvers.errors import SolverFailure

StandbyClass = tuple[tuple[int, frozenset[int]], list[int]]
"""((active owner, previous standby clients), its tasks)."""


def place_class_standbys(
    classes: list[StandbyClass],
    keep_rows: list[tuple[int, int, slice]],
    class_rows: list[tuple[int, np.ndarray, slice]],
    flows: np.ndarray,
    standby: np.ndarray,
) -> None:
    """Per class, the tasks are interchangeable and every client takes at most one replica of
    each: dealing the clients' counts round the class's tasks in turn never doubles up."""
    counts: dict[int, list[tuple[int, int]]] = {}
    for c, j, arcs in keep_rows:
        counts.setdefault(c, []).append((j, int(flows[arcs][0])))
    for c, fresh, arcs in class_rows:
        counts.setdefault(c, []).extend((int(j), int(f)) for j, f in zip(fresh, flows[arcs].tolist(), strict=True))
    r = standby.shape[1]
    for c, (_, members) in enumerate(classes):
        replicas: list[list[int]] = [[] for _ in members]
        turn = 0
        for j, count in sorted(counts.get(c, [])):
            for _ in range(count):
                replicas[turn % len(members)].append(j)
                turn += 1
        if any(len(chosen) != r or len(set(chosen)) != r for chosen in replicas):
            raise SolverFailure("standby counts could not be realised without duplicate replicas")
        for t, chosen in zip(members, replicas, strict=True):
            standby[t] = sorted(chosen)


def _deal_largest_need_first(
    takes: list[tuple[int, int]], needs: dict[int, int], held: dict[int, list[int]]
) -> dict[int, list[int]] | None:
    """Each client (most replicas first) takes the tasks that still need the most; None if stuck."""
    heap = [(-need, t) for t, need in needs.items()]
    heapq.heapify(heap)
    dealt: dict[int, list[int]] = {}
    for count, j in sorted(takes, key=lambda x: (-x[0], x[1])):
        chosen: list[tuple[int, int]] = []
        skipped: list[tuple[int, int]] = []
        while heap and len(chosen) < count:
            need, t = heapq.heappop(heap)
            (skipped if j in held.get(t, []) or j in dealt.get(t, []) else chosen).append((need, t))
        if len(chosen) < count:
            return None
        for need, t in chosen:
            dealt.setdefault(t, []).append(j)
            if need + 1 < 0:
                heapq.heappush(heap, (need + 1, t))
        for item in skipped:
            heapq.heappush(heap, item)
    return None if heap else dealt


def deal_by_matching(
    takes: list[tuple[int, int]], needs: dict[int, int], held: dict[int, list[int]]
) -> dict[int, list[int]] | None:
    """The exact dealing, when the greedy one gets stuck: a max flow from tasks (their missing
    replicas) to clients (the replicas they take), one unit per task and client."""
    tasks = sorted(needs)
    flow = max_flow.SimpleMaxFlow()
    source, sink, task0, client0 = 0, 1, 2, 2 + len(tasks)
    for i, t in enumerate(tasks):
        flow.add_arc_with_capacity(source, task0 + i, needs[t])
    for k, (count, _) in enumerate(takes):
        flow.add_arc_with_capacity(client0 + k, sink, count)
    pairs: list[tuple[int, int, int]] = []
    for i, t in enumerate(tasks):
        for k, (_, j) in enumerate(takes):
            # two replicas of a task never share a client
            if j not in held.get(t, []):
                pairs.append((flow.add_arc_with_capacity(task0 + i, client0 + k, 1), t, j))
    wanted = sum(count for count, _ in takes)
    if flow.solve(source, sink) != flow.OPTIMAL or flow.optimal_flow() != wanted:
        return None
    dealt: dict[int, list[int]] = {}
    for arc, t, j in pairs:
        if flow.flow(arc):
            dealt.setdefault(t, []).append(j)
    return dealt


def place_standbys(
    index: StreamsIndex,
    classes: list[tuple[tuple[int, frozenset[int]], list[int]]],
    keep_rows: list[tuple[int, int, slice]],
    pool_rows: list[tuple[int, slice]],
    flows: np.ndarray,
    standby: np.ndarray,
    budget: TimeBudget,
) -> None:
    """Turn counts into replicas: kept replicas first, then each owner's pool dealt out so
    that no task gets a client twice (largest remaining need first)."""
    r = standby.shape[1]
    held: dict[int, list[int]] = {}
    for c, j, arcs in keep_rows:
        for t in classes[c][1][: int(flows[arcs][0])]:
            held.setdefault(t, []).append(j)
    by_owner: dict[int, list[int]] = {}
    for (owner, _), members in classes:
        by_owner.setdefault(owner, []).extend(members)
    n = index.client_count
    clients = np.arange(n)
    for owner, arcs in pool_rows:
        budget.check("dealing out standby replicas")
        others = clients[clients != owner].tolist()
        takes = [(int(f), int(j)) for j, f in zip(others, flows[arcs].tolist(), strict=True) if f]
        needs = {t: r - len(held.get(t, [])) for t in sorted(by_owner[owner]) if len(held.get(t, [])) < r}
        if sum(count for count, _ in takes) != sum(needs.values()):
            raise SolverFailure("some standby replicas were left unplaced")
        dealt = _deal_largest_need_first(takes, needs, held)
        if dealt is None:
            dealt = deal_by_matching(takes, needs, held)
        if dealt is None:
            raise SolverFailure("standby counts could not be realised without duplicate replicas")
        for t, replicas in dealt.items():
            held.setdefault(t, []).extend(replicas)
    for t, replicas in held.items():
        standby[t, : len(replicas)] = sorted(replicas)
