"""Proven-optimal consumer assignment as one min-cost flow over aggregated units.

Network (nodes grow with topics x owners and members, never with partitions x members):

    class (pool, claimants) --kept--> claimant member --load--> sink
          \\--released--> pool --free--> any eligible member

The objective is lexicographic, folded into one integer cost: balance (sum of squared loads)
above moves above rack misses. Loads are convex, so a member's k-th unit costs more than its
(k-1)-th; only a window of those unit arcs is built, linear outside it, and the window is
re-centred until every load lies where the linear pieces are exact (a proof, not a guess).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from ortools.graph.python import min_cost_flow

from models.consumer_index import ConsumerIndex
from solvers.consumer_classes import UnitClasses, materialize
from solvers.errors import SolveTimeout, SolverFailure

_MAX_COST = 2**62
_MAX_ROUNDS = 40


@dataclass(frozen=True)
class Weights:
    """Costs per unit of each objective level; each level outweighs all levels below it."""

    balance: int
    moves: int
    racks: int


@dataclass(frozen=True)
class FlowAnswer:
    owners: list[np.ndarray]
    loads: np.ndarray
    """partitions per member."""


def solve_min_cost_flow(
    index: ConsumerIndex,
    unit_classes: UnitClasses,
    unit_weight: dict[int, int],
    *,
    max_imbalance: int,
    deadline: float,
) -> FlowAnswer:
    """Balance first, then moves, then racks; with max_imbalance k > 0 a second flow keeps
    loads within the balanced optimum's [min - k, max + k] and puts moves first."""
    model = ConsumerFlowModel(index, unit_classes, unit_weight)
    n = index.member_count
    lo, hi = np.zeros(n, dtype=np.int64), model.capacity.copy()
    racks = model.rack_range()
    balanced = model.solve(lo, hi, Weights(balance=(racks + 1) * (index.owned + 1),
                                           moves=racks + 1, racks=1), deadline)
    if max_imbalance == 0:
        return balanced
    w = model.unit_weight
    live = model.capacity > 0
    low = int(balanced.loads[live].min()) if live.any() else 0
    high = int(balanced.loads[live].max()) if live.any() else 0
    lo = np.where(live, -((-(np.maximum(low - max_imbalance, 0))) // w), 0)
    hi = np.minimum(model.capacity, (high + max_imbalance) // w)
    spread = int((w * w * (hi * hi - lo * lo)).sum())
    return model.solve(lo, hi, Weights(balance=racks + 1, moves=(racks + 1) * (spread + 1),
                                       racks=1), deadline)


class ConsumerFlowModel:
    def __init__(self, index: ConsumerIndex, unit_classes: UnitClasses, unit_weight: dict[int, int]):
        self.index = index
        self.classes = unit_classes
        n = index.member_count
        self.unit_weight = np.array([unit_weight.get(m, 1) for m in range(n)], dtype=np.int64)
        self.capacity = np.zeros(n, dtype=np.int64)
        for cls in unit_classes.classes:
            for m in unit_classes.pools[cls.pool].eligible:
                self.capacity[m] += len(cls.units)
        self.total_units = sum(len(c.units) for c in unit_classes.classes)
        # node numbering: classes, then pools, then members, then the sink
        self.pool_node0 = len(unit_classes.classes)
        self.member_node0 = self.pool_node0 + len(unit_classes.pools)
        self.sink = self.member_node0 + n

    def rack_range(self) -> int:
        """An upper bound on the rack-miss objective, so moves can outweigh it."""
        worst = 0
        for cls in self.classes.classes:
            miss = self.classes.pools[cls.pool].rack_miss
            worst += len(cls.units) * (max(miss.values()) if miss else 0)
        return worst

    def solve(self, lo: np.ndarray, hi: np.ndarray, weights: Weights, deadline: float) -> FlowAnswer:
        fixed = self._routing_arcs(weights)
        n = self.index.member_count
        share = self.total_units and (self.total_units / max(1, int((self.capacity > 0).sum())))
        center = np.clip(np.full(n, round(share), dtype=np.int64), lo, hi)
        radius = np.ones(n, dtype=np.int64)
        for _ in range(_MAX_ROUNDS):
            if time.monotonic() > deadline:
                raise SolveTimeout("min-cost flow did not finish within the time limit")
            a, b = np.maximum(center - radius, lo), np.minimum(center + radius, hi)
            load_arcs = self._load_arcs(lo, hi, a, b, weights.balance)
            units, flows = self._run(fixed, load_arcs, lo)
            exact = ((units >= a - 1) | (a == lo)) & ((units <= b + 1) | (b == hi))
            if exact.all():
                return self._answer(fixed, flows, units)
            center = np.where(exact, center, units)
            radius = np.where(exact, radius, radius * 4)
        raise SolverFailure("min-cost flow windows did not settle")

    def _routing_arcs(self, weights: Weights) -> tuple[np.ndarray, ...]:
        """Arcs that route units from classes to members, with their costs and capacities."""
        tails: list[int] = []
        heads: list[int] = []
        caps: list[int] = []
        costs: list[int] = []
        member0 = self.member_node0
        for c, cls in enumerate(self.classes.classes):
            pool = self.classes.pools[cls.pool]
            # a claimant that keeps the unit loses none of its claimed partitions (KIP-54 stickiness)
            for m, kept in sorted(cls.kept.items()):
                tails.append(c)
                heads.append(member0 + m)
                caps.append(len(cls.units))
                costs.append(weights.moves * (cls.claimed - kept) + weights.racks * pool.rack_miss.get(m, 0))
            # released to the pool: every claimed partition of the unit changes owner
            tails.append(c)
            heads.append(self.pool_node0 + cls.pool)
            caps.append(len(cls.units))
            costs.append(weights.moves * cls.claimed)
        pool_units = np.zeros(len(self.classes.pools), dtype=np.int64)
        for cls in self.classes.classes:
            pool_units[cls.pool] += len(cls.units)
        for p, pool in enumerate(self.classes.pools):
            # a released unit may go to any member subscribed to (the most of) its topics
            for m in pool.eligible:
                tails.append(self.pool_node0 + p)
                heads.append(member0 + m)
                caps.append(int(pool_units[p]))
                costs.append(weights.racks * pool.rack_miss.get(m, 0))
        return (
            np.array(tails, dtype=np.int32),
            np.array(heads, dtype=np.int32),
            np.array(caps, dtype=np.int64),
            np.array(costs, dtype=np.int64),
        )

    def _load_arcs(
        self, lo: np.ndarray, hi: np.ndarray, a: np.ndarray, b: np.ndarray, balance: int
    ) -> tuple[np.ndarray, ...]:
        """Member -> sink arcs: the k-th unit costs w^2 (2k - 1) times the balance weight,
        exactly inside [a, b] and linearly outside it (a convex under-estimate)."""
        w2 = self.unit_weight * self.unit_weight * balance
        tails: list[np.ndarray] = []
        caps: list[np.ndarray] = []
        costs: list[np.ndarray] = []
        below = a > lo
        members = np.arange(len(lo))
        tails.append(members[below])
        caps.append((a - lo)[below])
        costs.append((w2 * (2 * a - 1))[below])
        width = b - a
        inside = np.repeat(members, width)
        k = np.repeat(a, width) + _ranges(width) + 1
        tails.append(inside)
        caps.append(np.ones(len(inside), dtype=np.int64))
        costs.append(w2[inside] * (2 * k - 1))
        above = hi > b
        tails.append(members[above])
        caps.append((hi - b)[above])
        costs.append((w2 * (2 * b + 1))[above])
        tail = np.concatenate(tails) + self.member_node0
        return (
            tail.astype(np.int32),
            np.full(len(tail), self.sink, dtype=np.int32),
            np.concatenate(caps).astype(np.int64),
            np.concatenate(costs).astype(np.int64),
        )

    def _run(
        self, fixed: tuple[np.ndarray, ...], load: tuple[np.ndarray, ...], lo: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        tails, heads, caps, costs = (np.concatenate([f, x]) for f, x in zip(fixed, load, strict=True))
        if len(costs) and int(np.abs(costs).max()) * (self.sink + 2) >= _MAX_COST:
            raise SolverFailure("objective weights overflow 64-bit flow costs")
        smcf = min_cost_flow.SimpleMinCostFlow()
        arcs = smcf.add_arcs_with_capacity_and_unit_cost(tails, heads, caps, costs)
        supplies = np.zeros(self.sink + 1, dtype=np.int64)
        for c, cls in enumerate(self.classes.classes):
            supplies[c] = len(cls.units)
        # every member receives at least its lower bound of units
        supplies[self.member_node0 : self.sink] = -lo
        supplies[self.sink] = -(self.total_units - int(lo.sum()))
        smcf.set_nodes_supplies(np.arange(self.sink + 1, dtype=np.int32), supplies)
        status = smcf.solve()
        if status != smcf.OPTIMAL:
            raise SolverFailure(f"min-cost flow ended with status {status}")
        flows = smcf.flows(arcs)
        n_fixed = len(fixed[0])
        units = lo + np.bincount(
            tails[n_fixed:] - self.member_node0, weights=flows[n_fixed:], minlength=len(lo)
        ).astype(np.int64)
        return units, flows[:n_fixed]

    def _answer(self, fixed: tuple[np.ndarray, ...], flows: np.ndarray, units: np.ndarray) -> FlowAnswer:
        tails, heads = fixed[0], fixed[1]
        n_classes = len(self.classes.classes)
        direct: list[dict[int, int]] = [{} for _ in range(n_classes)]
        from_pool: list[dict[int, int]] = [{} for _ in self.classes.pools]
        for t, h, f in zip(tails.tolist(), heads.tolist(), flows.tolist(), strict=True):
            if f == 0 or h < self.member_node0:
                continue
            m = h - self.member_node0
            if t < n_classes:
                direct[t][m] = f
            else:
                from_pool[t - self.pool_node0][m] = f
        owners = materialize(self.index, self.classes, direct, from_pool)
        return FlowAnswer(owners=owners, loads=units * self.unit_weight)


def _ranges(width: np.ndarray) -> np.ndarray:
    """[0..w0-1, 0..w1-1, ...] for the widths given."""
    total = int(width.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(np.cumsum(width) - width, width)
    return np.arange(total, dtype=np.int64) - starts

