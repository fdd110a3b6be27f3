"""Streams targets as two min-cost flows: actives, then standbys (KAFKA-10121).

Actives: tasks grouped in classes (subtopology, previous owner, caught-up clients) flow
through per-(subtopology, client) nodes, bounded by the per-subtopology shares, into clients
bounded by their active shares; a client's stateful actives are softly capped at its stateful
share. Costs, highest level first: stateful overflow, active moves (each weighing its task's
restore cost with `stickiness: restore_cost`, the classes then split by cost), standby
pressure, moved actives sent to clients that are not caught up, stateless churn. The
per-subtopology and per-client bounds are a 2-D controlled rounding, which always exists, so
this flow is always feasible.

Standbys, given the actives: solvers/streams/standby_flow.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stickyd.models.streams.index import StreamsIndex
from stickyd.solvers.budget import TimeBudget
from stickyd.solvers.consumer.classes import Pool, UnitClasses, materialize
from stickyd.solvers.errors import SolverFailure
from stickyd.solvers.flows.levels import fixed_arcs, solve_by_levels
from stickyd.solvers.flows.network import FlowNetwork, costs_fit
from stickyd.solvers.streams.standby_flow import solve_standbys, standby_classes, weighed_costs_fit


@dataclass(frozen=True)
class StreamsTarget:
    active: np.ndarray
    """per task: its client."""
    standby: np.ndarray
    """shape (tasks, replicas): standby clients of stateful tasks; -1 for stateless rows."""
    kept_face: np.ndarray | None = None
    """per task, where known (restore costs with standbys): 1 when every target with the least
    stateful overflow and active move cost keeps its active on its previous owner, 0 when every
    such target moves it, -1 when they differ (or it had no owner). From the active flow's
    optimal face (solvers/flows/levels.py `fixed_arcs`)."""


CHECK_EVERY = 2_048
"""loop iterations between two looks at the budget."""
MOST_SUMMED_COSTS = 2**62
"""With restore costs, every task's items (active and standbys) may cost this much in all: a
flow's total cost is a 64-bit integer."""
EXACT_STANDBY_ARCS = 2_000_000
"""The per-class standby model (one arc per class and client) is tried up to this size."""


def solve_streams_flows(
    index: StreamsIndex, budget: TimeBudget | None = None, split_levels: bool = False
) -> StreamsTarget:
    """The target; `budget` is asked between stages and inside the dealing loops (a flow solve
    itself is not interruptible), raising SolveTimeout once it is spent. The active flow's levels
    are solved one objective after the other (solvers/flows/levels.py) where their weighted sum
    would overflow 64-bit costs (from about 50k tasks x 1,000 clients), or always with
    `split_levels`."""
    budget = budget or TimeBudget(float("inf"))
    if index.weighted and (1 + index.replicas) * index.cost_of(index.stateful) >= MOST_SUMMED_COSTS:
        raise SolverFailure("the restore costs sum past what 64-bit flow costs can hold")
    active, kept_face = _solve_actives(index, budget, split_levels)
    budget.check("the streams active flow")
    classes = standby_classes(index, active)
    try:
        standby = solve_standbys(index, active, classes, per_class=False, budget=budget)
    except SolverFailure:
        # the pooled counts could not be dealt out: every class straight to every client instead
        if len(classes) * index.client_count > EXACT_STANDBY_ARCS:
            raise
        budget.check("the streams standby flow")
        standby = solve_standbys(index, active, classes, per_class=True, budget=budget)
    return StreamsTarget(active=active, standby=standby, kept_face=kept_face)


@dataclass(frozen=True)
class _ActiveClass:
    """Tasks that are interchangeable for the active flow."""

    sub: int
    owner: int
    """previous active owner, -1 when none."""
    stateful: bool
    caught_up: frozenset[int]
    """clients caught up on these tasks (the owner included when it is)."""
    standbys: frozenset[int]
    """clients that held a standby of these tasks."""
    restore: int
    """what moving one of these tasks weighs at the active-moves level (1 when moves are counted)."""

    def cost(self, dest: int | None, weights: _ActiveWeights) -> int:
        """Cost of sending one task to `dest` (None: any client, through the pool)."""
        moved = self.owner >= 0 and dest != self.owner
        value = (weights.move * self.restore if self.stateful else weights.churn) if moved else 0
        # an active that must move goes preferably to a caught-up client
        if self.stateful and dest not in self.caught_up:
            value += weights.not_caught_up
        # a standby promoted to active keeps its client's state: it adds no standby pressure
        # there (the client's pressure arcs charge every stateful active; this refunds it)
        if dest is not None and dest in self.standbys:
            value -= weights.pressure
        return value


@dataclass(frozen=True)
class _ActiveWeights:
    """Lexicographic weights of the active flow, highest level first: stateful overflow,
    active moves, standby pressure (a previous standby its client must drop to stay within
    its stateful share), then the tie-breaks: moved actives on clients that are not caught
    up, stateless churn."""

    churn: int
    not_caught_up: int
    pressure: int
    move: int
    overflow: int

    weighted: bool = False
    """restore costs weigh the moves (`stickiness: restore_cost`)."""

    @classmethod
    def for_index(cls, index: StreamsIndex) -> _ActiveWeights:
        n_tasks = index.task_count
        stateful = int(index.stateful.sum())
        not_caught_up = 2
        # tie-breaks in all stay below one pressure unit
        pressure = 2 * n_tasks + 1
        # pressure units (at most one per stateful active, refunds at most one per promotion)
        move = (2 * stateful + 1) * pressure + pressure
        # one unit of overflow outweighs every move (each weighs its restore cost, 1 when counted)
        most_moves = index.cost_of(index.stateful)
        return cls(
            churn=1,
            not_caught_up=not_caught_up,
            pressure=pressure,
            move=move,
            overflow=(most_moves + 1) * move,
            weighted=index.weighted,
        )

    def split(self) -> tuple[_ActiveWeights, ...]:
        """The same levels as separate objectives, each with weights that dominate only within
        it: (stateful overflow, active moves), then (standby pressure, the tie-breaks). Moves
        count at most one per stateful task, so an overflow unit weighs one more than all of
        them. Where restore costs weigh the moves, overflow and moves are two objectives of their
        own (their summed costs may be as large as 10^15 a task)."""
        most_moves = self.overflow // self.move - 1  # the stateful tasks (their summed costs)
        lower = _ActiveWeights(
            churn=self.churn, not_caught_up=self.not_caught_up, pressure=self.pressure, move=0, overflow=0
        )
        if self.weighted:
            overflow = _ActiveWeights(churn=0, not_caught_up=0, pressure=0, move=0, overflow=1)
            moves = _ActiveWeights(churn=0, not_caught_up=0, pressure=0, move=1, overflow=0)
            return overflow, moves, lower
        upper = _ActiveWeights(churn=0, not_caught_up=0, pressure=0, move=1, overflow=most_moves + 1)
        return upper, lower


def _active_class(index: StreamsIndex, t: int) -> _ActiveClass:
    stateful = bool(index.stateful[t])
    return _ActiveClass(
        sub=int(index.task_sub[t]),
        owner=int(index.prev_active[t]),
        stateful=stateful,
        caught_up=index.caught_up[t] if stateful else frozenset(),
        standbys=index.prev_standby[t] if stateful else frozenset(),
        restore=int(index.move_cost[t]) if stateful else 1,
    )


def _solve_actives(index: StreamsIndex, budget: TimeBudget, split_levels: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Each task's client, and (restore costs with standbys) StreamsTarget.kept_face."""
    n, n_subs, n_tasks = index.client_count, len(index.subtopologies), index.task_count
    if n_tasks == 0:
        return np.zeros(0, dtype=np.int64), None
    keys: dict[_ActiveClass, list[int]] = {}
    for t in range(n_tasks):
        if t % CHECK_EVERY == 0:
            budget.check("the streams active flow")
        keys.setdefault(_active_class(index, t), []).append(t)
    classes = list(keys.items())
    weights = _ActiveWeights.for_index(index)
    # the levels as one weighted sum where it fits 64-bit flow costs, else one after the other
    # (solvers/flows/levels.py); the network is built once, with the costs of each way
    summable = not split_levels and costs_fit(2 * weights.overflow + weights.pressure, 1)
    levels = (weights, *weights.split()) if summable else weights.split()
    net, costs, direct_rows, pool_rows = _active_network(index, classes, levels, budget)
    budget.check("the streams active flow")
    if summable and (not len(costs[0]) or weighed_costs_fit(index, int(np.abs(costs[0]).max()), net.nodes)):
        flows = net.solve()
    else:
        flows = solve_by_levels(net, costs[1:] if summable else costs, lambda: budget.check("the streams active flow"))
    kept_face = None
    if index.weighted and index.replicas:
        # the levels above standby pressure: (stateful overflow, then active moves)
        upper = costs[-len(weights.split()) : -1]
        fixed = fixed_arcs(net, upper, flows, lambda: budget.check("the streams active flow"))
        kept_face = _kept_face(index, classes, direct_rows, flows, fixed)

    n_classes = len(classes)
    direct = np.stack([direct_rows[:, 0], direct_rows[:, 1], flows[direct_rows[:, 2]]], axis=1)
    pooled = (
        np.concatenate([np.stack([np.full(n, s), np.arange(n), flows[arcs]], axis=1) for s, arcs in pool_rows])
        if pool_rows
        else np.zeros((0, 3), np.int64)
    )
    sizes = np.array([len(tasks) for _, tasks in classes], dtype=np.int64)
    unit_classes = UnitClasses(
        pools=[Pool(0, (), {})] * n_subs,
        group_offset=np.array([0, n_tasks], dtype=np.int64),
        class_pool=np.array([cls.sub for cls, _ in classes], dtype=np.int64),
        class_claimed=np.zeros(n_classes, dtype=np.int64),
        class_start=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        units=np.concatenate([np.asarray(tasks, dtype=np.int64) for _, tasks in classes]),
        kept_class=np.zeros(0, np.int64),
        kept_member=np.zeros(0, np.int64),
        kept_count=np.zeros(0, np.int64),
    )
    owners = materialize(
        unit_classes, (direct[:, 0], direct[:, 1], direct[:, 2]), (pooled[:, 0], pooled[:, 1], pooled[:, 2])
    )
    return owners[0], kept_face


def _kept_face(
    index: StreamsIndex,
    classes: list[tuple[_ActiveClass, list[int]]],
    direct_rows: np.ndarray,
    flows: np.ndarray,
    fixed: np.ndarray,
) -> np.ndarray:
    """StreamsTarget.kept_face: a class's arc back to its previous owner carries its kept tasks
    (a kept task never needs the pool); where every optimal flow holds that arc empty or full,
    every such target moves them all or keeps them all."""
    face = np.full(index.task_count, -1, dtype=np.int64)
    for c, dest, arc in direct_rows.tolist():
        cls, tasks = classes[c]
        if cls.stateful and dest == cls.owner and fixed[arc] and flows[arc] in (0, len(tasks)):
            face[tasks] = 1 if flows[arc] == len(tasks) else 0
    return face


def _active_network(
    index: StreamsIndex,
    classes: list[tuple[_ActiveClass, list[int]]],
    levels: Sequence[_ActiveWeights],
    budget: TimeBudget,
) -> tuple[FlowNetwork, list[np.ndarray], np.ndarray, list[tuple[int, slice]]]:
    """The active flow's network (its costs at levels[0]), its costs per arc at each of `levels`,
    its direct arcs (rows of class, client, arc) and its pools' arcs (subtopology, arcs)."""
    n, n_subs, n_tasks = index.client_count, len(index.subtopologies), index.task_count
    net = FlowNetwork()
    costs: list[list[np.ndarray]] = [[] for _ in levels]

    def add(tails: Any, heads: Any, caps: Any, cost: Callable[[_ActiveWeights], Any], lower: Any = None) -> slice:
        arcs = net.add_arcs(tails, heads, caps, cost(levels[0]), lower=lower)
        for k, weights in enumerate(levels):
            costs[k].append(np.broadcast_to(np.asarray(cost(weights), dtype=np.int64), arcs.stop - arcs.start))
        return arcs

    class0 = net.add_nodes(len(classes))
    pool0 = net.add_nodes(n_subs)
    sub_client0 = net.add_nodes(n_subs * n)
    stateful0 = net.add_nodes(n)
    client0 = net.add_nodes(n)
    sink = net.add_nodes(1)
    # per class: a task stays with its previous active owner, or moves to a caught-up client or
    # one that held its standby, or to any client through its subtopology's pool (one block)
    tails: list[int] = []
    heads: list[int] = []
    caps: list[int] = []
    class_costs: list[list[int]] = [[] for _ in levels]
    direct: list[tuple[int, int, int]] = []
    for c, (cls, tasks) in enumerate(classes):
        if c % CHECK_EVERY == 0:
            budget.check("the streams active flow")
        net.supply(class0 + c, len(tasks))
        dests = sorted(({cls.owner} if cls.owner >= 0 else set()) | cls.caught_up | cls.standbys)
        for dest in [*dests, None]:
            if dest is not None:
                direct.append((c, dest, len(tails)))
            tails.append(class0 + c)
            heads.append(sub_client0 + cls.sub * n + dest if dest is not None else pool0 + cls.sub)
            caps.append(len(tasks))
            for k, weights in enumerate(levels):
                class_costs[k].append(cls.cost(dest, weights))
    block = net.add_arcs(tails, heads, caps, class_costs[0])
    for k in range(len(levels)):
        costs[k].append(np.asarray(class_costs[k], dtype=np.int64))
    direct_rows = np.array(direct, dtype=np.int64).reshape(-1, 3)
    direct_rows[:, 2] += block.start
    pool_rows: list[tuple[int, slice]] = []
    clients = np.arange(n)
    for s in range(n_subs):
        lo, hi = index.subtopology_bounds(s)
        pool_rows.append((s, add(pool0 + s, sub_client0 + s * n + clients, hi, lambda w: 0)))
        stateful_sub = bool(index.stateful[index.task_sub == s].any())
        # task parallel balance: each client runs its share of the subtopology's tasks
        into = (stateful0 if stateful_sub else client0) + clients
        add(sub_client0 + s * n + clients, into, hi, lambda w: 0, lower=lo)
    lo_sf, hi_sf = index.stateful_bounds()
    # stateful balance, softly: a client's stateful actives stay within its stateful share (its
    # standbys fill the rest; with no standbys, falling short of the share costs as much as
    # going over it: the total stateful actives are fixed, so these slopes are exact)
    if index.replicas == 0:
        add(stateful0 + clients, client0 + clients, lo_sf, lambda w: 0)
        add(stateful0 + clients, client0 + clients, hi_sf - lo_sf, lambda w: w.overflow)
        add(stateful0 + clients, client0 + clients, n_tasks, lambda w: 2 * w.overflow)
    else:
        # standby pressure: past (share - previous standbys), each stateful active on a client
        # makes it drop a previous standby (one standby move), unless it is a promoted standby
        free = np.clip(hi_sf - index.previous_standby_counts(), 0, hi_sf)
        add(stateful0 + clients, client0 + clients, free, lambda w: 0)
        add(stateful0 + clients, client0 + clients, hi_sf - free, lambda w: w.pressure)
        add(stateful0 + clients, client0 + clients, n_tasks, lambda w: w.overflow + w.pressure)
    lo, hi = index.active_bounds()
    # active task balance: each client runs its capacity-weighted share of all tasks
    add(client0 + clients, sink, hi, lambda w: 0, lower=lo)
    net.supply(sink, -n_tasks)
    level_costs = [np.concatenate(blocks) if blocks else np.zeros(0, np.int64) for blocks in costs]
    return net, level_costs, direct_rows, pool_rows
