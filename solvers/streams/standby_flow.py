"""The Streams standby flow (solvers/streams/flow.py's second flow): given the actives, tasks
grouped by (active owner, previous standby clients) keep their previous standby clients where
they can, the rest go through a pool per active owner to any other client, preferably on another
rack than the active's (KIP-925); each client's standbys are bounded so that its stateful count
meets its share, softly (the excess is minimised and reported). With `stickiness: restore_cost`
a standby move weighs its task's restore cost."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from stickyd.models.streams.index import StreamsIndex
from stickyd.solvers.budget import TimeBudget
from stickyd.solvers.flows.levels import solve_by_levels
from stickyd.solvers.flows.network import FlowNetwork, costs_fit
from stickyd.solvers.streams.standby_dealing import StandbyClass, place_class_standbys, place_standbys

WEIGHED_COST_MARGIN = 8
"""OR-Tools' min-cost flow refuses costs up to 4x below `costs_fit`'s bound (measured: 2.6e17 on
17 nodes is BAD_COST_RANGE); counted moves stay far below it, but with restore costs one
weighted sum comes near, so it is tried only this far inside the bound (else level by level)."""


def weighed_costs_fit(index: StreamsIndex, max_cost: int, nodes: int) -> bool:
    """Whether one weighted sum with arc costs up to `max_cost` fits a flow on `nodes` nodes."""
    return costs_fit(max_cost * (WEIGHED_COST_MARGIN if index.weighted else 1), nodes)


def standby_classes(index: StreamsIndex, active: np.ndarray) -> list[StandbyClass]:
    """Stateful tasks grouped by (active owner, previous standby clients other than the owner)."""
    keys: dict[tuple[int, frozenset[int], int], list[int]] = {}
    cost = index.move_cost.tolist()
    for t in np.flatnonzero(index.stateful).tolist():
        owner = int(active[t])
        # (tasks of different restore costs are not interchangeable where moves are weighed)
        keys.setdefault((owner, index.prev_standby[t] - {owner}, cost[t]), []).append(t)
    return [((owner, previous), tasks) for (owner, previous, _), tasks in keys.items()]


def solve_standbys(
    index: StreamsIndex, active: np.ndarray, classes: list[StandbyClass], per_class: bool, budget: TimeBudget
) -> np.ndarray:
    """Pooled (per_class=False): a class's new replicas go through its owner's pool, bounded per
    client by the pool's tasks; small, but the counts may not deal out. Per class: a class's
    replicas go straight to each client, at most one per task; exact, larger."""
    n, r = index.client_count, index.replicas
    standby = np.full((index.task_count, max(r, 1)), -1, dtype=np.int64)[:, :r]
    tasks = np.flatnonzero(index.stateful)
    if r == 0 or len(tasks) == 0:
        return standby
    owners = sorted({owner for (owner, _), _ in classes})
    net = _StandbyNetwork(index)
    class0 = net.add_nodes(len(classes))
    pool0 = net.add_nodes(len(owners))
    client0 = net.add_nodes(n)
    sink = net.add_nodes(1)
    pool_of = {owner: i for i, owner in enumerate(owners)}

    # how many of an owner's tasks could take a new replica on each client (not one it keeps)
    pool_room = np.zeros((len(owners), n), dtype=np.int64)
    keep_rows: list[tuple[int, int, slice]] = []
    class_rows: list[tuple[int, np.ndarray, slice]] = []
    for c, ((owner, previous), members) in enumerate(classes):
        net.supply(class0 + c, r * len(members))
        restore = int(index.move_cost[members[0]])
        # a previous standby client keeps its replica: no state to rebuild
        for j in sorted(previous):
            keep_rows.append(
                (c, j, net.add(class0 + c, client0 + j, len(members), index.same_rack(owner, np.array([j]))))
            )
        if per_class:
            # every other replica is placed anew (a standby move), at most one per task and client
            fresh = np.array([j for j in range(n) if j != owner and j not in previous], dtype=np.int64)
            arcs = net.add(class0 + c, client0 + fresh, len(members), index.same_rack(owner, fresh), moves=restore)
            class_rows.append((c, fresh, arcs))
            continue
        # every other replica is placed anew (a standby move)
        net.add(class0 + c, pool0 + pool_of[owner], r * len(members), False, moves=restore)
        pool_room[pool_of[owner]] += len(members)
        pool_room[pool_of[owner], sorted(previous)] -= len(members)
    pool_rows: list[tuple[int, slice]] = []
    clients = np.arange(n)
    for i, owner in enumerate(owners if not per_class else []):
        others = clients[clients != owner]
        # never a standby beside its active, nor two replicas of a task on one client
        pool_rows.append(
            (owner, net.add(pool0 + i, client0 + others, pool_room[i, others], index.same_rack(owner, others)))
        )
    active_sf = np.bincount(active[tasks], minlength=n)
    lo_sf, hi_sf = index.stateful_bounds()
    lo = np.maximum(lo_sf - active_sf, 0)
    hi = np.maximum(hi_sf - active_sf, lo)
    most = len(tasks) - active_sf
    # stateful balance, softly: short of the share or over it costs more than any standby move
    net.add(client0 + clients, sink, np.minimum(lo, most), False)
    net.add(client0 + clients, sink, np.maximum(np.minimum(hi, most) - np.minimum(lo, most), 0), False, excess=1)
    net.add(client0 + clients, sink, np.maximum(most - np.minimum(hi, most), 0), False, excess=2)
    net.supply(sink, -r * len(tasks))
    budget.check("the streams standby flow")
    flows = net.solve(lambda: budget.check("the streams standby flow"))
    budget.check("the streams standby flow")
    if per_class:
        place_class_standbys(classes, keep_rows, class_rows, flows, standby)
    else:
        place_standbys(index, classes, keep_rows, pool_rows, flows, standby, budget)
    return standby


class _StandbyNetwork(FlowNetwork):
    """The standby flow's network, its costs kept per level, highest first: stateful excess,
    standby moves (each weighing its restore cost, 1 when counted), standbys on their active's
    rack (KIP-925). Solved as one weighted sum where that fits 64-bit costs, else level by level
    (solvers/flows/levels.py)."""

    def __init__(self, index: StreamsIndex) -> None:
        super().__init__()
        self.index = index
        r = index.replicas
        # weights, lowest level first: a standby on its active's rack (KIP-925), a standby move,
        # a unit of stateful excess (each outweighs every unit of the levels below)
        self.same_rack = 1
        self.move = r * int(index.stateful.sum()) + 1
        self.excess = (r * index.cost_of(index.stateful) + 1) * self.move
        self.levels: tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]] = ([], [], [])

    def add(self, tails: Any, heads: Any, caps: Any, same_rack: Any, moves: int = 0, excess: int = 0) -> slice:
        """Arcs whose unit costs `excess` units of stateful excess, `moves` standby moves'
        costs and, where `same_rack`, a standby on its active's rack."""
        rack = np.asarray(same_rack, dtype=np.int64) * self.same_rack
        summed = excess * self.excess + moves * self.move + rack
        arcs = self.add_arcs(tails, heads, caps, summed if costs_fit(self.excess * 3, 1) else rack)
        size = arcs.stop - arcs.start
        for level, cost in zip(self.levels, (excess, moves, rack), strict=True):
            level.append(np.broadcast_to(np.asarray(cost, dtype=np.int64), size))
        return arcs

    def solve(self, between: Callable[[], None] = lambda: None) -> np.ndarray:
        costs = self.costs()
        if costs_fit(self.excess * 3, 1) and (
            not len(costs) or weighed_costs_fit(self.index, int(np.abs(costs).max()), self.nodes)
        ):
            return super().solve()
        return solve_by_levels(self, [np.concatenate(level) for level in self.levels], between)
