"""Balance `per_topic` with co-partitioned topics or racks, at any size: one min-cost flow, its levels
solved in turn (solvers/flows/levels.py); plain topics take the smaller flow of per_topic_extras.py.

Network, per topic group g (units of one topic, or KIP-315 joins) and eligible member m:

    kept_mgr (claims of m in g on racks r) --keep, cost -1--> take_mg --[floor, ceil]--> member m
       \\--release, cost 0--> pool_gr --cost 0--> take_mg              member m --convex--> sink
    join unit u (claimed by several) --keep, cost -kept--> take_mg, --release--> pool_g

- per topic: the arc take_mg -> m carries floor(P/S) to ceil(P/S) units (the level that is always
  reachable, so it is a bound, not a cost);
- then the totals: member -> sink carries the floor part at no cost, then one arc per possible
  extra unit costing the rise of the member's squared load in partitions, w^2 (2k - 1), where every
  unit the member may take gives it w partitions (else the squares are of units, not proven);
- then stickiness: every unit kept saves its kept partitions;
- then racks (KIP-881): a single topic's units are pooled by the racks holding their replicas, and
  an arc to a member on none of them costs one (joins' racks are left out).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from stickyd.models.consumer.balance import per_topic_bounds
from stickyd.models.consumer.index import ConsumerIndex, UnitGroup
from stickyd.solvers.consumer.load.data import kept_by
from stickyd.solvers.flows.levels import solve_by_levels
from stickyd.solvers.flows.network import FlowNetwork


def member_unit_widths(index: ConsumerIndex) -> tuple[dict[int, int], bool]:
    """(partitions per unit for each member, whether each member's units all give it that many)."""
    width: dict[int, int] = {}
    uniform = True
    for group in index.groups:
        if not group.units:
            continue
        for m in group.eligible:
            if width.setdefault(m, group.weight) != group.weight:
                uniform = False
    return width, uniform


def solve_per_topic_flow(index: ConsumerIndex, between: Callable[[], None]) -> tuple[list[np.ndarray], bool]:
    """(owners, proven): proven when every member's units are of one width (see the docstring)."""
    width, uniform = member_unit_widths(index)
    network = _PerTopicNetwork(index.racks if index.has_racks else (None,) * index.member_count)
    plan: list[_Dealing | None] = []
    for group in index.groups:
        plan.append(network.add_group(group) if group.units else None)
        between()
    network.add_totals(width if uniform else {}, sum(g.units for g in index.groups))
    flow = solve_by_levels(network.net, network.levels(), between)
    return _deal(index, plan, flow), uniform


class _PerTopicNetwork:
    """The network of the module's docstring, built group by group, with a cost per level per arc."""

    def __init__(self, racks: tuple[str | None, ...]) -> None:
        self.net = FlowNetwork()
        self.racks = racks
        members = self.members = len(racks)
        self.member_node = self.net.add_nodes(members)
        self.sink = self.net.add_nodes(1)
        self.square_costs: list[np.ndarray] = []
        self.keep_costs: list[np.ndarray] = []
        self.miss_costs: list[np.ndarray] = []
        self.base = np.zeros(members, dtype=np.int64)
        self.extra = np.zeros(members, dtype=np.int64)

    def arcs(
        self, tails: Any, heads: Any, caps: Any, square: Any, keep: Any, lower: Any = None, miss: Any = 0
    ) -> slice:
        where = self.net.add_arcs(tails, heads, caps, 0, lower)
        size = where.stop - where.start
        for costs, cost in ((self.square_costs, square), (self.keep_costs, keep), (self.miss_costs, miss)):
            costs.append(np.broadcast_to(np.asarray(cost, np.int64), (size,)).copy())
        return where

    def levels(self) -> list[np.ndarray]:
        misses = np.concatenate(self.miss_costs)
        return [np.concatenate(self.square_costs), np.concatenate(self.keep_costs)] + ([misses] if misses.any() else [])

    def add_group(self, group: UnitGroup) -> _Dealing:
        net = self.net
        eligible = np.asarray(group.eligible, dtype=np.int64)
        low, high = per_topic_bounds(group)
        take = net.add_nodes(len(eligible))
        # per topic: each eligible member takes floor or ceil of the group's units
        takes = self.arcs(take + np.arange(len(eligible)), self.member_node + eligible, high, 0, 0, low)
        self.base[eligible] += low
        self.extra[eligible] += high - low
        if len(group.topics) > 1:
            pool = net.add_nodes(1)
            # units nobody keeps reach any eligible member through the pool
            self.arcs(pool, take + np.arange(len(eligible)), group.units, 0, 0)
            return self._join_units(group, take, pool, takes)
        # a single topic's units, pooled by the racks holding their replicas
        signature: dict[frozenset[str] | None, int] = {}
        if group.racks is None:  # one pool: no unit has a rack
            signature[None] = 0
            sig = np.zeros(group.units, dtype=np.int64)
        else:
            racks = group.racks[0]
            sig = np.fromiter((signature.setdefault(r, len(signature)) for r in racks), np.int64, group.units)
        miss = np.array(
            [[_off_rack(self.racks[m], held) for m in group.eligible] for held in signature], dtype=np.int64
        ).reshape(len(signature), len(eligible))
        pools = net.add_nodes(len(signature))
        sizes = np.bincount(sig, minlength=len(signature))
        # units nobody keeps reach any eligible member through their pool, off-rack at a cost
        pooled = self.arcs(
            np.repeat(pools + np.arange(len(signature)), len(eligible)),
            np.tile(take + np.arange(len(eligible)), len(signature)),
            np.repeat(sizes, len(eligible)),
            0,
            0,
            miss=miss.reshape(-1),
        )
        row = np.full(self.members + 1, -1, dtype=np.int64)
        row[eligible] = np.arange(len(eligible))
        claimant = row[group.claims[0]]
        claimed = claimant >= 0
        free = np.bincount(sig[~claimed], minlength=len(signature))
        for s_, count in enumerate(free.tolist()):
            net.supply(pools + s_, count)
        # (claimant, signature) pairs in lexicographic order, as one key each
        keys, counts = np.unique(claimant[claimed] * len(signature) + sig[claimed], return_counts=True)
        holders, kept_sig = keys // len(signature), keys % len(signature)
        kept_nodes = net.add_nodes(len(counts))
        for i, count in enumerate(counts.tolist()):
            net.supply(kept_nodes + i, count)
        # a claimed unit stays with its claimant, or is released to its pool
        ends = kept_nodes + np.arange(len(counts))
        keep = self.arcs(ends, take + holders, counts, 0, -1, miss=miss[kept_sig, holders])
        self.arcs(ends, pools + kept_sig, counts, 0, 0)
        return _Dealing(takes, keep, holders, claimant, sig=sig, keep_sig=kept_sig, pooled=pooled)

    def _join_units(self, group: UnitGroup, take: int, pool: int, takes: slice) -> _Dealing:
        unit_nodes = self.net.add_nodes(group.units)
        keeps = np.stack([kept_by(group.claims, m) for m in group.eligible])  # eligible x units
        for unit in range(group.units):
            self.net.supply(unit_nodes + unit, 1)
        rows, units = np.nonzero(keeps)
        # a join unit goes to a member keeping some of its partitions, or is released to the pool
        keep = self.arcs(unit_nodes + units, take + rows, 1, 0, -keeps[rows, units])
        self.arcs(unit_nodes + np.arange(group.units), pool, 1, 0, 0)
        return _Dealing(takes, keep, rows, None, units)

    def add_totals(self, width: dict[int, int], units: int) -> None:
        """Then the totals: each member's extra units cost the rise of its squared load (`width`:
        partitions per unit; a member missing counts units)."""
        for m in range(self.members):
            w = width.get(m, 1)
            base, extra = int(self.base[m]), int(self.extra[m])
            self.arcs(self.member_node + m, self.sink, base, 0, 0, base)
            if extra:
                k = base + np.arange(1, extra + 1, dtype=np.int64)
                self.arcs(np.full(extra, self.member_node + m), self.sink, 1, w * w * (2 * k - 1), 0)
        self.net.supply(self.sink, -units)


def _off_rack(rack: str | None, held: frozenset[str] | None) -> int:
    """1 when a member on `rack` reads a partition whose replicas are all elsewhere (KIP-881)."""
    return int(rack is not None and held is not None and len(held) > 0 and rack not in held)


@dataclass(frozen=True)
class _Dealing:
    """Where a topic group's units are in the flow vector."""

    takes: slice
    """arcs take_mg -> member, in eligible order: units each member takes."""
    keep: slice
    """arcs that keep units with a claimant."""
    rows: np.ndarray
    """eligible positions of the keep arcs' members."""
    claimant: np.ndarray | None
    """single topic: per unit, the eligible position of its claimant (-1: none)."""
    units: np.ndarray | None = None
    """join: the unit of each keep arc."""
    sig: np.ndarray | None = None
    """single topic: per unit, its rack signature (its pool)."""
    keep_sig: np.ndarray | None = None
    """single topic: the rack signature of each keep arc."""
    pooled: slice | None = None
    """single topic: arcs pool -> take, signature by signature, eligible members within."""


def _deal(index: ConsumerIndex, plan: list[_Dealing | None], flow: np.ndarray) -> list[np.ndarray]:
    """Units to members from the flow: kept units to their claimants (lowest numbers first), the
    other units, ascending, pool by pool, to the members in eligible order, as many as the flow
    gives each."""
    owners = []
    for group, step in zip(index.groups, plan, strict=True):
        owner = np.full(group.units, -1, dtype=np.int64)
        if step is None:
            owners.append(owner)
            continue
        eligible = np.asarray(group.eligible, dtype=np.int64)
        kept = flow[step.keep]
        if step.claimant is None:
            assert step.units is not None
            taken = np.zeros(len(eligible), dtype=np.int64)
            stays = kept > 0
            owner[step.units[stays]] = eligible[step.rows[stays]]
            np.add.at(taken, step.rows[stays], 1)
            # what each member takes in all, less what it kept, comes from the pool
            owner[owner < 0] = np.repeat(eligible, flow[step.takes] - taken)
        else:
            assert step.sig is not None and step.keep_sig is not None and step.pooled is not None
            _keep_lowest(owner, step.claimant, step.sig, kept, eligible)
            pooled = flow[step.pooled].reshape(-1, len(eligible))
            for sig, given in enumerate(pooled):
                # each pool's units left, ascending, to the members in eligible order
                owner[np.flatnonzero((owner < 0) & (step.sig == sig))] = np.repeat(eligible, given)
        owners.append(owner)
    return owners


def _keep_lowest(
    owner: np.ndarray, claimant: np.ndarray, sig: np.ndarray, kept: np.ndarray, eligible: np.ndarray
) -> None:
    """Each keep arc's flow, as units: the lowest-numbered units of its (claimant, rack signature)
    go to the claimant. The keep arcs were made in np.unique's order of those pairs, which is the
    order of the blocks below."""
    claimed = np.flatnonzero(claimant >= 0)
    units = claimed[np.lexsort((claimed, sig[claimed], claimant[claimed]))]
    holder, pool = claimant[units], sig[units]
    starts = np.flatnonzero(np.r_[True, (holder[1:] != holder[:-1]) | (pool[1:] != pool[:-1])])
    sizes = np.diff(np.r_[starts, len(units)])
    rank = np.arange(len(units)) - np.repeat(starts, sizes)
    stays = rank < np.repeat(kept, sizes)
    owner[units[stays]] = eligible[holder[stays]]
