"""Proven-optimal consumer assignment as one min-cost flow over aggregated units.

Network (nodes grow with topics and members, never with partitions x members):

    class (pool, claimants) --kept--> claimant member --load--> sink
          \\--released--> pool --free--> any eligible member

A class with a single eligible claimant (every class of a plain topic: one per topic and owner,
a million of them when Kafka's assignors left each member one partition of every topic) has no
node of its own: its units are supplied at the claimant, which may send them back to the pool
(`released`, costing the release less the keeping). Conservation makes that exact: the claimant
keeps its units minus what it sends back. That leaves pools + members + 1 nodes and cuts a 1M x
2,000 solve from about 11 s to about 1 s.

The objective is lexicographic, folded into one integer cost: balance (sum of squared loads)
above moves above rack misses. Loads are convex, so a member's k-th unit costs more than its
(k-1)-th; unit arcs are built only inside a window per member, doubling segments outside it,
and windows widen until every load lies where the arcs' marginals prove it optimal (a proof,
not a guess: solvers/flows/convex_loads.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from ortools.graph.python import min_cost_flow

from stickyd.models.consumer.index import ConsumerIndex
from stickyd.solvers.consumer.classes import UnitClasses, materialize
from stickyd.solvers.errors import SolverFailure, SolveTimeout
from stickyd.solvers.flows.convex_loads import load_segments, settled, widen
from stickyd.solvers.flows.even_moves import even_split_at_bound

_MAX_COST = 2**62
EVEN_FIRST_MIN_UNITS = 10_000
"""units from which the flow first tries the even split (`_even_split`): below, the gain is a few
ms and the answer stays the one the tiny path (solvers/consumer/small/flow.py, the lexicographic
weights) gives byte for byte among equally optimal ones."""
CAPPED_MIN_UNITS = 10_000
"""units from which the load arcs far above a window charge a capped marginal
(solvers/flows/convex_loads.py): fewer phases of cost scaling for large flows; below, the answers
stay the ones the uncapped arcs give, byte for byte among equally optimal ones."""
_MAX_ROUNDS = 40


class FlowInfeasible(SolverFailure):
    """No flow meets the members' load bounds."""


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
    balanced = _even_split(model, racks, deadline)
    if balanced is None:
        full = Weights(balance=(racks + 1) * (index.owned + 1), moves=racks + 1, racks=1)
        balanced = model.solve(lo, hi, full, deadline)
    if max_imbalance == 0:
        return balanced
    w = model.unit_weight
    live = model.capacity > 0
    low = int(balanced.loads[live].min()) if live.any() else 0
    high = int(balanced.loads[live].max()) if live.any() else 0
    lo = np.where(live, -((-(np.maximum(low - max_imbalance, 0))) // w), 0)
    hi = np.minimum(model.capacity, (high + max_imbalance) // w)
    spread = int((w * w * (hi * hi - lo * lo)).sum())
    return model.solve(lo, hi, Weights(balance=racks + 1, moves=(racks + 1) * (spread + 1), racks=1), deadline)


def solve_even_at_bound(index: ConsumerIndex, unit_classes: UnitClasses) -> FlowAnswer | None:
    """The even split at the moves' bound alone, every unit weighing one partition (the caller
    checks): the lexicographic optimum when it answers (balanced within one unit, the fewest moves
    any such split can have, no racks); None when some member cannot reach the even share or no
    even split meets the bound. No min-cost flow runs."""
    model = ConsumerFlowModel(index, unit_classes, {})
    live = model.capacity > 0
    if not live.any():
        return None
    share = model.total_units // int(live.sum())
    if (model.capacity[live] < share).any():
        return None
    return model.solve_even_at_bound(share)


def _even_split(model: ConsumerFlowModel, racks: int, deadline: float) -> FlowAnswer | None:
    """The balanced optimum as a flow that costs moves and rack misses only, every member that can
    take units held to the even share or one more; None when no assignment meets those bounds (then
    the lexicographic weights decide).

    Why it is exact: with every unit weighing the same, the assignments of least sum of squared
    loads are exactly those whose loads lie within one unit of each other, when any does; so among
    them, the fewest moves (then rack misses) is the lexicographic optimum. Small costs are what
    makes it worth it: OR-Tools' cost scaling runs about log(costs) phases (1M x 2,000 unequal:
    0.16 s against 0.29 s with the balance level on the arcs). When the bounds cannot be met the
    attempt leaves time for the full flow or says it is out of time, as the dispatcher's estimate
    covers one flow."""
    w = model.unit_weight
    live = model.capacity > 0
    if model.total_units < EVEN_FIRST_MIN_UNITS or not live.any() or (w[live] != w[live][0]).any():
        return None
    share = model.total_units // int(live.sum())
    if (model.capacity[live] < share).any():  # some member cannot reach the even share
        return None
    if time.monotonic() > deadline:
        raise SolveTimeout("min-cost flow did not finish within the time limit")
    started = time.monotonic()
    at_bound = model.solve_even_at_bound(share)
    if at_bound is not None:
        return at_bound
    try:
        return model.solve_even(share, racks)
    except FlowInfeasible:
        if time.monotonic() + 2 * (time.monotonic() - started) > deadline:
            raise SolveTimeout("min-cost flow: loads cannot be even, no time left for the full flow") from None
        return None


class ConsumerFlowModel:
    def __init__(self, index: ConsumerIndex, unit_classes: UnitClasses, unit_weight: dict[int, int]):
        self.index = index
        self.classes = unit_classes
        n = index.member_count
        # partitions per unit: one for members the weights leave out
        self.unit_weight = np.ones(n, dtype=np.int64)
        if unit_weight:
            self.unit_weight[np.fromiter(unit_weight, dtype=np.int64)] = list(unit_weight.values())
        self.pool_units = np.bincount(
            unit_classes.class_pool, weights=unit_classes.size, minlength=len(unit_classes.pools)
        ).astype(np.int64)
        self.capacity = np.zeros(n, dtype=np.int64)
        self.pool_members = [index.eligible_ids[pool.group] for pool in unit_classes.pools]
        for members, units in zip(self.pool_members, self.pool_units.tolist(), strict=True):
            self.capacity[members] += units
        self.total_units = int(self.pool_units.sum())
        self.capped = self.total_units >= CAPPED_MIN_UNITS
        self.rack_miss = unit_classes.rack_miss(n)
        self.racks_differ = bool(self.rack_miss.any())
        # classes with several eligible claimants keep a node; the others fold into a claimant or a pool
        kept_per_class = np.bincount(unit_classes.kept_class, minlength=unit_classes.count)
        self.split = np.flatnonzero(kept_per_class > 1)
        single = kept_per_class[unit_classes.kept_class] == 1
        self.single_class, self.single_member = unit_classes.kept_class[single], unit_classes.kept_member[single]
        self.single_count = unit_classes.kept_count[single]
        self.split_rows = np.flatnonzero(~single)
        """rows of the kept arrays whose class keeps its node."""
        self.unclaimed = np.flatnonzero(kept_per_class == 0)
        # node numbering: split classes, then pools, then members, then the sink
        self.node_of_class = np.full(unit_classes.count, -1, dtype=np.int64)
        self.node_of_class[self.split] = np.arange(len(self.split))
        self.pool_node0 = len(self.split)
        self.member_node0 = self.pool_node0 + len(unit_classes.pools)
        self.sink = self.member_node0 + n

    def rack_range(self) -> int:
        """An upper bound on the rack-miss objective, so moves can outweigh it."""
        worst_per_pool = self.rack_miss.max(axis=1) if self.rack_miss.size else np.zeros(0, np.int64)
        return int((self.pool_units * worst_per_pool).sum()) if len(worst_per_pool) else 0

    def solve(self, lo: np.ndarray, hi: np.ndarray, weights: Weights, deadline: float) -> FlowAnswer:
        fixed = self._routing_arcs(weights)
        n = self.index.member_count
        share = self.total_units / max(1, int((self.capacity > 0).sum()))
        center = np.clip(np.full(n, round(share), dtype=np.int64), lo, hi)
        a, b = np.maximum(center - 1, lo), np.minimum(center + 1, hi)
        for _ in range(_MAX_ROUNDS):
            if time.monotonic() > deadline:
                raise SolveTimeout("min-cost flow did not finish within the time limit")
            load_arcs = self._load_arcs(lo, hi, a, b, weights.balance)
            units, flows = self._run(fixed, load_arcs, lo)
            # without a balance level every load costs the same: any flow's loads are exact
            done = settled(units, lo, hi, a, b, capped=self.capped) if weights.balance else np.ones(n, dtype=bool)
            if done.all():
                return self._answer(fixed, flows, units)
            a, b = widen(units, lo, hi, a, b, done)
        raise SolverFailure("min-cost flow windows did not settle")

    def solve_even(self, share: int, racks: int) -> FlowAnswer:
        """Fewest moves, then rack misses, with every member that can take units holding `share`
        units or one more; FlowInfeasible when no assignment does."""
        fixed = self._routing_arcs(Weights(balance=0, moves=racks + 1, racks=1))
        members = np.flatnonzero(self.capacity > 0)
        # every member that can take units takes the even share, and one more at most
        lo = np.zeros(self.index.member_count, dtype=np.int64)
        lo[members] = share
        one_more = (
            (self.member_node0 + members).astype(np.int32),
            np.full(len(members), self.sink, dtype=np.int32),
            np.ones(len(members), dtype=np.int64),
            np.zeros(len(members), dtype=np.int64),
        )
        units, flows = self._run(fixed, one_more, lo)
        return self._answer(fixed, flows, units)

    def solve_even_at_bound(self, share: int) -> FlowAnswer | None:
        """The even split as a max flow, when one moves no more than every even split must
        (solvers/flows/even_moves.py); None when none does, or when giving up a unit may cost more
        or less than another (classes with several claimants, racks, units keeping more partitions)."""
        count = self.single_count
        if len(self.split) or self.racks_differ or (len(count) and (count != count[0]).any()):
            return None
        cls = self.classes
        free = np.bincount(
            cls.class_pool[self.unclaimed], weights=cls.size[self.unclaimed], minlength=len(cls.pools)
        ).astype(np.int64)
        sizes = cls.size[self.single_class]
        held = (self.single_member, cls.class_pool[self.single_class], sizes)
        found = even_split_at_bound(held, free, self.pool_members, self.capacity > 0, share)
        if found is None:
            return None
        owners = materialize(cls, (self.single_class, self.single_member, sizes - found.given_back), found.taken)
        return FlowAnswer(owners=owners, loads=found.units * self.unit_weight)

    def _routing_arcs(self, weights: Weights) -> tuple[np.ndarray, ...]:
        """Arcs that route units from classes to members, with their capacities and costs:
        split classes' kept and released arcs, then single claimants' releases, then pools'
        free arcs (`_answer` reads the flows in this order)."""
        cls = self.classes
        size = cls.size
        kc, km = cls.kept_class[self.split_rows], cls.kept_member[self.split_rows]

        def keeping(c: np.ndarray, m: np.ndarray, kept: np.ndarray) -> np.ndarray:
            # a claimant that keeps the unit loses none of the partitions it keeps (stickiness)
            return weights.moves * (cls.class_claimed[c] - kept) + self._misses(cls.class_pool[c], m, weights)

        kept = (
            self.node_of_class[kc],
            self.member_node0 + km,
            size[kc],
            keeping(kc, km, cls.kept_count[self.split_rows]),
        )
        # released to the pool: every claimed partition of the unit changes owner
        released = (
            self.node_of_class[self.split],
            self.pool_node0 + cls.class_pool[self.split],
            size[self.split],
            weights.moves * cls.class_claimed[self.split],
        )
        # a single claimant holds its class's units and may give them back to the pool
        sc, sm = self.single_class, self.single_member
        given_back = (
            self.member_node0 + sm,
            self.pool_node0 + cls.class_pool[sc],
            size[sc],
            weights.moves * cls.class_claimed[sc] - keeping(sc, sm, self.single_count),
        )
        # a released unit may go to any member reading (the most of) its topics
        sizes = np.fromiter(map(len, self.pool_members), dtype=np.int64, count=len(self.pool_members))
        pool_ids = np.repeat(np.arange(len(cls.pools), dtype=np.int64), sizes)
        members = np.concatenate(self.pool_members) if cls.pools else pool_ids
        free = (
            self.pool_node0 + pool_ids,
            self.member_node0 + members,
            self.pool_units[pool_ids],
            self._misses(pool_ids, members, weights),
        )
        parts = (kept, released, given_back, free)
        return tuple(
            np.concatenate([part[i] for part in parts], dtype=np.int32 if i < 2 else np.int64) for i in range(4)
        )

    def _misses(self, pools: np.ndarray, members: np.ndarray, weights: Weights) -> np.ndarray:
        """The rack-miss cost of each (pool, member) unit placement (KIP-881)."""
        if not self.racks_differ:
            return np.zeros(len(members), dtype=np.int64)
        return weights.racks * self.rack_miss[pools, members]

    def _load_arcs(
        self, lo: np.ndarray, hi: np.ndarray, a: np.ndarray, b: np.ndarray, balance: int
    ) -> tuple[np.ndarray, ...]:
        """Member -> sink arcs: the k-th unit costs w^2 (2k - 1) times the balance weight, one
        arc per unit inside (a, b], doubling segments outside (stickyd.solvers.flows.convex_loads)."""
        w2 = self.unit_weight * self.unit_weight * balance
        member, capacity, k = load_segments(lo, hi, a, b, capped=self.capped)
        return (
            (member + self.member_node0).astype(np.int32),
            np.full(len(member), self.sink, dtype=np.int32),
            capacity,
            w2[member] * (2 * k - 1),
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
        size = self.classes.size
        supplies[: len(self.split)] = size[self.split]
        np.add.at(supplies, self.member_node0 + self.single_member, size[self.single_class])
        np.add.at(supplies, self.pool_node0 + self.classes.class_pool[self.unclaimed], size[self.unclaimed])
        # every member receives at least its lower bound of units
        supplies[self.member_node0 : self.sink] -= lo
        supplies[self.sink] = -(self.total_units - int(lo.sum()))
        smcf.set_nodes_supplies(np.arange(self.sink + 1, dtype=np.int32), supplies)
        status = smcf.solve()
        if status == smcf.INFEASIBLE:
            raise FlowInfeasible("no flow meets the members' load bounds")
        if status != smcf.OPTIMAL:
            raise SolverFailure(f"min-cost flow ended with status {status}")
        flows = smcf.flows(arcs)
        n_fixed = len(fixed[0])
        units = lo + np.bincount(
            tails[n_fixed:] - self.member_node0, weights=flows[n_fixed:], minlength=len(lo)
        ).astype(np.int64)
        return units, flows[:n_fixed]

    def _answer(self, fixed: tuple[np.ndarray, ...], flows: np.ndarray, units: np.ndarray) -> FlowAnswer:
        n_kept, n_released, n_single = len(self.split_rows), len(self.split), len(self.single_class)
        kept_flow = flows[:n_kept]
        given_back = flows[n_kept + n_released : n_kept + n_released + n_single]
        pooled = slice(n_kept + n_released + n_single, len(flows))
        direct = (
            np.concatenate([self.classes.kept_class[self.split_rows], self.single_class]),
            np.concatenate([self.classes.kept_member[self.split_rows], self.single_member]),
            np.concatenate([kept_flow, self.classes.size[self.single_class] - given_back]),
        )
        tails, heads = fixed[0][pooled].astype(np.int64), fixed[1][pooled].astype(np.int64)
        owners = materialize(self.classes, direct, (tails - self.pool_node0, heads - self.member_node0, flows[pooled]))
        return FlowAnswer(owners=owners, loads=units * self.unit_weight)
