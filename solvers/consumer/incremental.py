"""Proven-optimal answers that start from the previous assignment and touch only what must move.

When the previous assignment was already balanced (stickyd's own optimum) and one event happened
(a member left, a member joined, partitions were added), the optimum is usually the previous
assignment plus the event's consequences: the leaver's and the new partitions go to the least
loaded members reading their topics, a joiner takes units from the most loaded members holding
its topics, and a few chains of hand-overs (A gives a unit of t to B, B one of u to C) even out
what eligibility keeps apart. This module builds that candidate in time proportional to what
moves, then proves it optimal (stickyd.solvers.consumer.incremental_proof: no negative cycle in
its residual graph; the needless moves it still makes cancelled first,
stickyd.solvers.consumer.incremental_moves) or gives up, and the dispatcher runs the full
min-cost flow (solvers/consumer/flow.py) as before.

Scope: every topic plain (no co-partitioning, no racks: one unit is one partition), balance
`count` with max_imbalance 0. Anything else returns None.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from stickyd.models.consumer.index import ConsumerIndex
from stickyd.solvers.consumer.incremental_moves import aggregate, realize, settle
from stickyd.solvers.consumer.incremental_proof import least_reachable

MIN_UNITS = 10_000
"""units from which the dispatcher tries this first: below, the full flow takes a few ms and its
answer stays the one it always gave, byte for byte, among equally optimal ones."""
MAX_REPAIRS = 256
"""hand-over chains the candidate may still need for balance, and members that need one, at most:
each chain is a search over the (members x topics) tables, so past this the full flow is cheaper
(partitions added to a tenth of the topics of a 1M x 2,000 group: about 1,900 members need one)."""
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

    def counts(self) -> np.ndarray:
        """(members, pools): units of each pool each member holds, from `claimed` and the few
        units whose owner changed."""
        counts = self.kept()
        moved = np.flatnonzero((self.owner != self.claimant) & (self.owner >= 0))
        np.add.at(counts, (self.owner[moved], self.pool[moved]), 1)
        return counts

    def kept(self) -> np.ndarray:
        """(members, pools): units of each pool each member holds of those it owned before."""
        kept = self.claimed.copy()
        gone = np.flatnonzero((self.owner != self.claimant) & (self.claimant >= 0))
        np.subtract.at(kept, (self.claimant[gone], self.pool[gone]), 1)
        return kept

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
    loads = layout.loads()
    if not _balanced_before(layout, loads):
        return None
    unclaimed = np.flatnonzero(layout.owner < 0)
    joiners = np.flatnonzero((loads == 0) & layout.eligible.any(axis=0))
    _place_unclaimed(layout, unclaimed, loads)
    for joiner in joiners.tolist():
        _take_for_joiner(layout, joiner, loads)
    if not _repair(layout, loads, give_up_at):
        return None
    before, kept = layout.counts(), layout.kept()
    counts = before.copy()
    # proven optimal, after cancelling the needless moves the chains made (incremental_moves.py)
    if not settle(counts, layout.claimed, layout.eligible, give_up_at):
        return None
    # topics whose counts changed, or whose members hold others' units while theirs are elsewhere
    wrong = ((before != counts) | (kept != np.minimum(counts, layout.claimed))).any(axis=0)
    realize(layout.owner, layout.claimant, layout.offsets, counts, np.flatnonzero(wrong))
    return [layout.owner[a:b] for a, b in zip(layout.offsets[:-1], layout.offsets[1:], strict=True)]


def _balanced_before(layout: Layout, loads: np.ndarray) -> bool:
    """Whether the claims alone are (nearly) balanced, members owning nothing aside: after stickyd's
    own optimum and a leave, a join or partitions added they are; after Kafka's assignors they are
    not, and the full flow is the tool (hundreds of thousands of moves are no increment)."""
    far = np.iinfo(np.int64).max // 4
    before = np.where(loads > 0, loads, far)
    reach = least_reachable(layout.eligible, layout.kept() > 0, before)
    if reach is None:
        return False
    return int(np.count_nonzero(reach <= before - 2)) <= MAX_UNBALANCED_SHARE * layout.member_count


def _layout(index: ConsumerIndex) -> Layout | None:
    groups = index.groups
    n = index.member_count
    plain = all(len(g.topics) == 1 and g.racks is None and g.weight == 1 and g.eligible for g in groups)
    if not groups or not plain or n * len(groups) > MAX_CELLS:
        return None
    sizes = np.fromiter((g.units for g in groups), dtype=np.int64, count=len(groups))
    claimant = np.concatenate([g.claims[0] for g in groups]).astype(np.int64)
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
    pool, the pools read by the fewest members first; each pool's units in ascending order."""
    if not len(unclaimed):
        return
    pools, starts = np.unique(layout.pool[unclaimed], return_index=True)
    ends = np.append(starts[1:], len(unclaimed))
    readers = layout.eligible[pools].sum(axis=1)
    for i in np.lexsort((pools, readers)).tolist():
        units = unclaimed[starts[i] : ends[i]]
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


def _repair(layout: Layout, loads: np.ndarray, give_up_at: float) -> bool:
    """Hand units down chains (each the fewest hand-overs from a heavy member to the lightest of
    the nearest members two lighter), heaviest members first, until no chain improves the balance;
    False past MAX_REPAIRS chains or `give_up_at` (time.monotonic)."""
    counts = layout.counts()
    repairs = 0
    while True:
        reach = least_reachable(layout.eligible, counts > 0, loads)
        if reach is None:
            return False
        heavy = np.flatnonzero(reach <= loads - 2)
        if not len(heavy):
            return True
        for start in heavy[np.argsort(-loads[heavy], kind="stable")].tolist():
            if repairs >= MAX_REPAIRS or time.monotonic() > give_up_at:
                return False
            for pool, giver, taker in _chain(layout.eligible, counts, loads, start):
                _hand_over(layout, pool, giver, taker)
                counts[giver, pool] -= 1
                counts[taker, pool] += 1
                loads[giver] -= 1
                loads[taker] += 1
            repairs += 1


def _chain(eligible: np.ndarray, counts: np.ndarray, loads: np.ndarray, start: int) -> list[tuple[int, int, int]]:
    """(pool, giver, taker) hand-overs from `start` to the lightest of the nearest members at
    least two lighter (none when there is none now), by breadth-first search over members and
    the pools they hold."""
    n, pools = counts.shape
    seen_member, seen_pool = np.zeros(n, dtype=bool), np.zeros(pools, dtype=bool)
    seen_member[start] = True
    member_parent, pool_parent = np.full(n, -1), np.full(pools, -1)
    frontier = np.array([start])
    while len(frontier):
        # pools the frontier holds, then their readers not seen yet
        held = counts[frontier] > 0
        found = np.flatnonzero(held.any(axis=0) & ~seen_pool)
        if not len(found):
            break
        pool_parent[found] = frontier[held[:, found].argmax(axis=0)]
        seen_pool[found] = True
        readers = eligible[found]
        frontier = np.flatnonzero(readers.any(axis=0) & ~seen_member)
        member_parent[frontier] = found[readers[:, frontier].argmax(axis=0)]
        seen_member[frontier] = True
        light = frontier[loads[frontier] <= loads[start] - 2]
        if len(light):
            hops, member = [], int(light[np.argmin(loads[light])])
            while member != start:
                pool = int(member_parent[member])
                giver = int(pool_parent[pool])
                hops.append((pool, giver, member))
                member = giver
            return hops[::-1]
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
