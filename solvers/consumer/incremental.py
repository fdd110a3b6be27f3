"""Proven-optimal answers that start from the previous assignment and touch only what must move.

When the previous assignment was already balanced (stickyd's own optimum) and one event happened (a
member left, a member joined, partitions were added), the optimum is usually the previous assignment
plus the event's consequences: the leaver's and the new partitions go to the least loaded members
reading their topics, a joiner takes units from the most loaded members holding its topics, and
chains of hand-overs (A gives a unit of t to B, B one of u to C) even out what eligibility keeps
apart: hundreds of them per round, along the shortest paths of one search. This module builds that
candidate in time proportional to what moves, then proves it optimal
(stickyd.solvers.consumer.incremental_proof: no negative cycle in its residual graph; the needless
moves it still makes cancelled first, stickyd.solvers.consumer.incremental_moves) or gives up, and
the dispatcher runs the full min-cost flow (solvers/consumer/flow.py) as before.

Scope: every topic plain (no co-partitioning, no racks: one unit is one partition), balance
`count` with max_imbalance 0. Anything else returns None.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass

import numpy as np

from stickyd.models.consumer.index import ConsumerIndex
from stickyd.solvers.consumer.incremental_moves import aggregate, realize, settle
from stickyd.solvers.consumer.incremental_proof import FAR, MAX_ROUNDS, least_reachable, residual_costs

MIN_UNITS = 10_000
"""units from which the dispatcher tries this first: below, the full flow takes a few ms and its
answer stays the one it always gave, byte for byte, among equally optimal ones."""
MAX_REPAIR_ROUNDS = 64
"""rounds of hand-over chains at most (one search over the (members x topics) tables each, then
many chains along it): partitions added to a tenth of the topics of a 1M x 2,000 group take
four."""
PLACING_ROUNDS = 8
"""unclaimed units are placed in this many rounds over their pools, a share of each pool's per
round, so that no pool's readers fill up before the others' get theirs (as one water-filling over
all pools would)."""
MAX_UNBALANCED_SHARE = 0.01
"""members that could pass partitions down to a lighter one before the event, at most (a share of
all): the previous assignment was balanced, give or take."""
MAX_CELLS = 4_000_000
"""members x topics at most: the proof keeps a few dense int64 tables of that size (32 MB each at
the most; 1M partitions x 2,000 members over 500 topics: 1M cells)."""


@dataclass
class Layout:
    """The groups as flat arrays: unit u belongs to pool (topic group) `pool[u]`."""

    member_count: int
    owner: np.ndarray
    """per unit: its member, -1 while unplaced (starts as the resolved claimant)."""
    claimant: np.ndarray
    pool: np.ndarray
    offsets: np.ndarray
    """pool p's units are owner[offsets[p]:offsets[p + 1]]."""
    eligible: np.ndarray
    """bool (pools, members): who may take a pool's units."""
    claimed: np.ndarray
    """(members, pools): units of each pool each member owned before."""

    def loads(self) -> np.ndarray:
        placed = self.owner >= 0
        return np.bincount(self.owner[placed], minlength=self.member_count).astype(np.int64)

    def counts(self, kept: np.ndarray | None = None) -> np.ndarray:
        """(members, pools): units of each pool each member holds, from `claimed` and the few
        units whose owner changed (from `kept` when the caller has it)."""
        counts = self.kept() if kept is None else kept.copy()
        moved = np.flatnonzero((self.owner != self.claimant) & (self.owner >= 0))
        np.add.at(counts, (self.owner[moved], self.pool[moved]), 1)
        return counts

    def kept(self) -> np.ndarray:
        """(members, pools): units of each pool each member holds of those it owned before."""
        kept = self.claimed.copy()
        gone = self.gone()
        np.subtract.at(kept, (self.claimant[gone], self.pool[gone]), 1)
        return kept

    def gone(self) -> np.ndarray:
        """The units no longer held by the member that owned them before."""
        return np.flatnonzero((self.owner != self.claimant) & (self.claimant >= 0))

    def held(self) -> np.ndarray:
        """bool (members, pools): who holds at least one unit of each pool."""
        return self.counts() > 0


def solve_incremental(index: ConsumerIndex, give_up_at: float = float("inf")) -> list[np.ndarray] | None:
    """Owners per group, proven balanced-optimal with the fewest moves; None when the problem is
    outside the scope, the candidate cannot be proven or its chains run past `give_up_at`
    (time.monotonic): then the full flow answers."""
    layout = _layout(index)
    if layout is None:
        return None
    loads = layout.claimed.sum(axis=1)  # nothing has moved yet: every member holds what it claimed
    if not _balanced_before(layout, loads):
        return None
    unclaimed = np.flatnonzero(layout.owner < 0)
    joiners = np.flatnonzero((loads == 0) & layout.eligible.any(axis=0))
    _place_unclaimed(layout, unclaimed, loads)
    for joiner in joiners.tolist():
        _take_for_joiner(layout, joiner, loads)
    repaired = _repair(layout, loads, give_up_at)
    if repaired is None:
        return None
    counts, costs, paths = repaired
    before = counts.copy()
    # proven optimal, after cancelling the needless moves the chains made (incremental_moves.py);
    # the repair kept the residual tables up to date, and its last search's labels are potentials
    # on them: the proof starts from both
    tables, potentials = (costs.give, costs.take), (paths.label, paths.pool_label)
    if not settle(counts, layout.claimed, layout.eligible, give_up_at, tables=tables, potentials=potentials):
        return None
    realize(layout.owner, layout.claimant, layout.offsets, counts, _dealt_again(layout, before, counts))
    return [layout.owner[a:b] for a, b in zip(layout.offsets[:-1], layout.offsets[1:], strict=True)]


def _dealt_again(layout: Layout, before: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The topics to deal again: those whose counts the proof changed, or whose members hold
    others' units while theirs are elsewhere (only where an owned unit changed owner: elsewhere
    every member keeps what it owned)."""
    wrong = (before != counts).any(axis=0)
    gone = layout.gone()
    pools = np.unique(layout.pool[gone])
    kept = layout.claimed[:, pools]  # a copy (fancy indexing), less the units gone
    np.subtract.at(kept, (layout.claimant[gone], np.searchsorted(pools, layout.pool[gone])), 1)
    wrong[pools] |= (kept != np.minimum(counts[:, pools], layout.claimed[:, pools])).any(axis=0)
    return np.flatnonzero(wrong)


def _balanced_before(layout: Layout, loads: np.ndarray) -> bool:
    """Whether the claims alone are (nearly) balanced, members owning nothing aside: after stickyd's
    own optimum and a leave, a join or partitions added they are; after Kafka's assignors they are
    not, and the full flow is the tool (hundreds of thousands of moves are no increment). Asked
    before any unit moves: each member holds what it claimed."""
    far = np.iinfo(np.int64).max // 4
    before = np.where(loads > 0, loads, far)
    most = int(MAX_UNBALANCED_SHARE * layout.member_count)
    reach = least_reachable(layout.eligible, layout.claimed > 0, before, most_lighter=most)
    if reach is None:
        return False
    return int(np.count_nonzero(reach <= before - 2)) <= most


def _layout(index: ConsumerIndex) -> Layout | None:
    groups = index.groups
    n = index.member_count
    plain = all(len(g.topics) == 1 and g.racks is None and g.weight == 1 and g.eligible for g in groups)
    if not groups or not plain or n * len(groups) > MAX_CELLS:
        return None
    sizes = np.fromiter((g.units for g in groups), dtype=np.int64, count=len(groups))
    claimant = np.concatenate([g.claims[0] for g in groups]).astype(np.int64, copy=False)
    eligible = np.zeros((len(groups), n), dtype=bool)
    for p, members in enumerate(index.eligible_ids):
        eligible[p, members] = True
    pool = np.repeat(np.arange(len(groups), dtype=np.int64), sizes)
    return Layout(
        member_count=n,
        owner=claimant.copy(),
        claimant=claimant,
        pool=pool,
        offsets=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        eligible=eligible,
        claimed=aggregate(claimant, pool, n, len(groups)),
    )


def _place_unclaimed(layout: Layout, unclaimed: np.ndarray, loads: np.ndarray) -> None:
    """Unclaimed units (a leaver's, new partitions) fill the least loaded eligible members, pool by
    pool, the pools read by the fewest members first; each pool's units in ascending order (in
    up to PLACING_ROUNDS rounds, a share of each pool's units per round)."""
    if not len(unclaimed):
        return
    pools, starts = np.unique(layout.pool[unclaimed], return_index=True)
    ends = np.append(starts[1:], len(unclaimed))
    readers = layout.eligible[pools].sum(axis=1)
    order = np.lexsort((pools, readers)).tolist()
    # in rounds when each member is to take several (partitions added), else in one (a leaver's)
    rounds = int(min(PLACING_ROUNDS, -(-len(unclaimed) // layout.member_count)))
    for part in range(rounds):
        for i in order:
            # this round's share of the pool's units
            size = ends[i] - starts[i]
            units = unclaimed[starts[i] + size * part // rounds : starts[i] + size * (part + 1) // rounds]
            if not len(units):
                continue
            members = np.flatnonzero(layout.eligible[pools[i]])
            counts = water_fill(loads[members], len(units))
            layout.owner[units] = np.repeat(members, counts)
            loads[members] += counts


def water_fill(loads: np.ndarray, k: int) -> np.ndarray:
    """How many of k units each member takes so that the lowest loads rise first: all that end
    below the final level reach it, the rest go one each to the lowest (then first) members."""
    order = np.lexsort((np.arange(len(loads)), loads))
    level = loads[order]
    # raising the first i + 1 members to level[i] costs (i + 1) level[i] - sum(level[:i + 1])
    cost = np.arange(1, len(level) + 1) * level - np.cumsum(level)
    i = int(np.searchsorted(cost, k, side="right")) - 1
    total = k + int(level[: i + 1].sum())
    top, extra = divmod(total, i + 1)
    fill = np.zeros(len(loads), dtype=np.int64)
    fill[order[: i + 1]] = top - level[: i + 1]
    fill[order[:extra]] += 1
    return fill


def _take_for_joiner(layout: Layout, joiner: int, loads: np.ndarray) -> None:
    """The joiner takes one unit at a time from the most loaded member holding units of its
    topics while that member has at least two more than the joiner: its highest-numbered unit of
    the topic it holds most of."""
    pools = np.flatnonzero(layout.eligible[:, joiner])
    held = layout.kept()[:, pools]
    taken: dict[tuple[int, int], int] = {}
    holders = held.sum(axis=1) > 0
    while holders.any():
        masked = np.where(holders, loads, -1)
        giver = int(masked.argmax())
        if loads[giver] < loads[joiner] + 2:
            break
        column = int(held[giver].argmax())
        held[giver, column] -= 1
        holders[giver] = held[giver].any()
        loads[giver] -= 1
        loads[joiner] += 1
        key = (int(pools[column]), giver)
        taken[key] = taken.get(key, 0) + 1
    for (pool, giver), count in taken.items():
        start = layout.offsets[pool]
        mine = np.flatnonzero(layout.owner[start : layout.offsets[pool + 1]] == giver)
        layout.owner[start + mine[-count:]] = joiner


def _repair(layout: Layout, loads: np.ndarray, give_up_at: float) -> tuple[np.ndarray, _Costs, _Paths] | None:
    """Hand units down chains until no chain improves the balance, in rounds: each round one
    shortest-path search from every member at once (`_Paths`), then a unit down the path to every
    member at least two lighter than the heaviest member reaching it, lightest first, while the
    path still holds (successive shortest paths, many at once). The counts it ends with, their
    residual tables and the search that found no chain left; None past MAX_REPAIR_ROUNDS rounds,
    a round that moves nothing, a search that does not settle, or `give_up_at`."""
    counts = layout.counts()
    costs = _Costs.of(layout, counts)
    for _ in range(MAX_REPAIR_ROUNDS):
        if time.monotonic() > give_up_at:
            return None
        paths = _Paths.search(costs, loads)
        if paths is None:
            return None
        takers = np.flatnonzero(paths.source_load() >= loads + 2)
        if not len(takers):
            return counts, costs, paths
        if not _hand_down(layout, counts, costs, loads, paths, takers):
            return None
    return None


@dataclass
class _Paths:
    """Bellman-Ford over members and pools from every member at once, a member m starting at
    -B L(m): a member's label is then -B times the heaviest load that can pass a unit down to it,
    plus the fewest moves that takes (hand-overs of a member's own unit, less those that bring a
    unit back to its former owner), B above any count of moves. The labels are potentials: an
    arc whose cost is the difference of its ends' labels lies on a shortest path (admissible)."""

    label: np.ndarray
    pool_label: np.ndarray
    start: np.ndarray
    """per member: its label's start, -B L(m) for the loads of the search."""
    balance: int

    @classmethod
    def search(cls, costs: _Costs, loads: np.ndarray) -> _Paths | None:
        balance = costs.take.shape[0] + costs.take.shape[1] + 2
        member = start = -balance * loads
        for _ in range(MAX_ROUNDS):
            # a pool's label from the members holding it, then the members' from the pools they read
            pool = (costs.give + member[None, :]).min(axis=1)
            cost = (costs.take + pool[None, :]).min(axis=1)
            if not (cost < member).any():
                return cls(member, pool, start, balance)
            member = np.minimum(member, cost)
        return None

    def source_load(self) -> np.ndarray:
        """per member: the heaviest load that can pass a unit down to it (its own at least)."""
        return -((self.label + self.balance // 2) // self.balance)


@dataclass
class _Costs:
    """The residual arcs' costs in moves, kept up to date as units go down paths."""

    give: np.ndarray
    """(pools, members): member m hands a unit of pool p over; a move when only its own ones are
    left, FAR when it holds none."""
    take: np.ndarray
    """(members, pools): member m takes a unit of pool p; one back (-1) when its own units of the
    pool are elsewhere, FAR when it does not read it."""

    @classmethod
    def of(cls, layout: Layout, counts: np.ndarray) -> _Costs:
        return cls(*residual_costs(counts, layout.claimed, layout.eligible))

    def update(self, layout: Layout, counts: np.ndarray, member: int, pool: int) -> None:
        held, owned = counts[member, pool], layout.claimed[member, pool]
        self.give[pool, member] = 0 if held > owned else 1 if held > 0 else FAR
        self.take[member, pool] = -1 if held < owned else 0 if layout.eligible[pool, member] else FAR


def _hand_down(
    layout: Layout, counts: np.ndarray, costs: _Costs, loads: np.ndarray, paths: _Paths, takers: np.ndarray
) -> bool:
    """Units down admissible paths to each taker, lightest first (a taker again while it stays
    the lightest), from a member where a label starts that is still at least two heavier; many
    paths per search, as Dinic's blocking flows; whether any unit moved."""
    dead_member, dead_pool = np.zeros(len(loads), dtype=bool), np.zeros(counts.shape[1], dtype=bool)
    level, started = paths.source_load(), paths.label == paths.start
    # a path begins where the taker's label does: a start as heavy as the search found
    starts = {int(load): started & (loads == load) for load in np.unique(level[takers]).tolist()}
    held = counts > 0
    queue = [(int(loads[m]), m) for m in takers.tolist()]
    heapq.heapify(queue)
    moved = False
    while queue:
        load, taker = heapq.heappop(queue)
        begins = starts[int(level[taker])] & (loads >= load + 2)
        if not begins.any():
            continue
        hops = _admissible_path(costs, held, paths, taker, begins, dead_member, dead_pool)
        if not hops:
            continue
        # as many units as the path carries at its cost, while the taker stays the lightest
        lighter = queue[0][0] + 1 - load if queue else len(counts)
        units = max(1, min(_capacity(hops, counts, layout.claimed), (loads[hops[0][1]] - load) // 2, lighter))
        for pool, giver, member in hops:
            for _ in range(units):
                _hand_over(layout, pool, giver, member)
            counts[giver, pool] -= units
            counts[member, pool] += units
            held[giver, pool], held[member, pool] = counts[giver, pool] > 0, True
            costs.update(layout, counts, giver, pool)
            costs.update(layout, counts, member, pool)
            loads[giver] -= units
            loads[member] += units
        moved = True
        heapq.heappush(queue, (load + units, taker))
    return moved


def _capacity(hops: list[tuple[int, int, int]], counts: np.ndarray, claimed: np.ndarray) -> int:
    """Units that can go down the path at the cost of its first one."""
    units = len(counts) * counts.shape[1]
    for pool, giver, taker in hops:
        held, owned = int(counts[giver, pool]), int(claimed[giver, pool])
        units = min(units, held - owned if held > owned else held)
        held, owned = int(counts[taker, pool]), int(claimed[taker, pool])
        if held < owned:
            units = min(units, owned - held)
    return units


def _admissible_path(
    costs: _Costs,
    held: np.ndarray,
    paths: _Paths,
    taker: int,
    begins: np.ndarray,
    dead_member: np.ndarray,
    dead_pool: np.ndarray,
) -> list[tuple[int, int, int]]:
    """(pool, giver, taker) hand-overs from one of `begins` to `taker` over admissible arcs (at
    the current counts), found depth first backwards from the taker; none when there is none.
    Nodes found to lead nowhere are marked dead (for the lightest takers first, so for the
    heavier ones too)."""
    begun: np.ndarray | None = None
    members: list[int] = [taker]
    pools: list[int] = []
    on_path, pool_on_path = np.zeros(len(begins), dtype=bool), np.zeros(held.shape[1], dtype=bool)
    on_path[taker] = True
    while members:
        member = members[-1]
        if len(members) > len(pools):
            if begins[member]:
                return [(pools[i], members[i + 1], members[i]) for i in reversed(range(len(pools)))]
            # pools handing down to the member on a shortest path, those a start holds first
            tight = ~dead_pool & ~pool_on_path & (paths.pool_label + costs.take[member] == paths.label[member])
            found = np.flatnonzero(tight)
            if len(found):
                if len(found) > 1:
                    begun = np.logical_or.reduce(held[begins], axis=0) if begun is None else begun
                    found = found[begun[found]] if begun[found].any() else found
                pool = int(found[0])
                pools.append(pool)
                pool_on_path[pool] = True
            else:
                dead_member[member] = True
                on_path[members.pop()] = False
            continue
        # members holding the pool that hand it down on a shortest path, starts first
        tight = ~dead_member & ~on_path & (paths.label + costs.give[pools[-1]] == paths.pool_label[pools[-1]])
        if tight.any():
            giver = int((tight & begins).argmax()) if (tight & begins).any() else int(tight.argmax())
            members.append(giver)
            on_path[giver] = True
        else:
            pool = pools.pop()
            dead_pool[pool], pool_on_path[pool] = True, False
    return []


def _hand_over(layout: Layout, pool: int, giver: int, taker: int) -> None:
    """One unit of `pool` from giver to taker: one the taker owned before if the giver holds one,
    else one neither owned, else the giver's own (its highest-numbered)."""
    start = layout.offsets[pool]
    owner = layout.owner[start : layout.offsets[pool + 1]]
    claimant = layout.claimant[start : layout.offsets[pool + 1]]
    mine = owner == giver
    for wanted in (mine & (claimant == taker), mine & (claimant != giver), mine):
        units = np.flatnonzero(wanted)
        if len(units):
            owner[units[-1]] = taker
            return
