"""Balance `load` at any size: keep what fits, shed the fewest partitions, place them where they fit.

1. every unit stays with the eligible member keeping most of it (its claimant), when there is one;
2. a member whose kept weight is above (1 + load_tolerance) x bound x capacity sheds its
   heaviest kept units until it is under (fewest units shed, so fewest moves for that member);
3. the free units (never owned, claimed by a member that cannot take them, or shed) go heaviest
   first, each to the eligible member where it ends lightest: the smallest (W + w) / c;
4. while the bottleneck member is above the cap, one move of one of its units that lowers the
   larger of its own and the receiver's normalized load: of a unit it does not keep (moving it
   again adds no move) when one does, else of a kept one; of those, the one that lowers it most
   (none: stop).

`tight_answer` runs steps 1 to 3 with no tolerance, then step 4 down to a tenth of the tolerance:
a valid answer whose bottleneck, usually within a fraction of a percent of the proven bound, is an
upper bound on L* that tightens the proven lower bound on the moves (bound.py's
`moves_lower_bound`; shedding again from the sticky answer instead bounds L* less closely).

Valid by construction (a unit only goes to an eligible member). Not proven: the dispatcher
reports how far it can be from the best with `stats.load`.
"""

from __future__ import annotations

import heapq
import math
from fractions import Fraction
from typing import Protocol

import numpy as np

from stickyd.solvers.budget import TimeBudget
from stickyd.solvers.consumer.load.data import LoadData
from stickyd.solvers.time_policy import LOAD_REPAIR_SHARE

CHECK_EVERY = 4096
"""units placed between two looks at the clock."""
REPAIR_ROUNDS_PER_MEMBER = 4
"""step 4 moves at most this many units per member of the group."""
SCAN_FROM_SETS = 32
"""from this many distinct eligible sets among the free units' topics on, step 3 finds the lightest
member by a scan rather than by lazy heaps."""
TIGHT_SLACK_DIVISOR = 10
"""`tight_answer` repairs its bottleneck down to (1 + load_tolerance / this) x the bound."""


def shed_and_place(data: LoadData, bound: Fraction, budget: TimeBudget) -> list[np.ndarray]:
    limit = (1 + data.tolerance) * bound
    owners, weight = _shed_and_place_under(data, limit, budget)
    _repair(data, owners, weight, limit, budget)
    return owners


def tight_answer(data: LoadData, bound: Fraction, budget: TimeBudget) -> list[np.ndarray]:
    """Steps 1 to 3 under `bound` itself: every member sheds down to bound x capacity, so the
    free units spread the weight as evenly as the greedy placement can; then step 4 until the
    bottleneck is within a tenth of the tolerance of `bound` (closer buys the moves floor little)."""
    owners, weight = _shed_and_place_under(data, bound, budget)
    _repair(data, owners, weight, (1 + data.tolerance / TIGHT_SLACK_DIVISOR) * bound, budget)
    return owners


def _shed_and_place_under(data: LoadData, limit: Fraction, budget: TimeBudget) -> tuple[list[np.ndarray], np.ndarray]:
    owners = [g.claimant.copy() for g in data.groups]
    weight = data.member_weights(owners)
    cap = np.array([math.floor(limit * c) for c in data.capacity.tolist()], dtype=np.int64)
    _shed(data, owners, weight, cap)
    _place(data, owners, weight, budget)
    return owners, weight


def _shed(data: LoadData, owners: list[np.ndarray], weight: np.ndarray, cap: np.ndarray) -> None:
    """Step 2: members above their cap give up their heaviest kept units until under it."""
    excess = weight - cap
    if not (excess > 0).any():
        return
    member, group, unit, unit_weight = [], [], [], []
    for g, owner in enumerate(owners):
        over = np.flatnonzero((owner >= 0) & (excess[np.maximum(owner, 0)] > 0))
        if len(over):
            member.append(owner[over])
            group.append(np.full(len(over), g, np.int64))
            unit.append(over)
            unit_weight.append(data.unit_weights_of(g, owner)[over])
    m, g_, u, w = (np.concatenate(a) for a in (member, group, unit, unit_weight))
    order = np.lexsort((u, g_, -w, m))  # member by member, heaviest first
    m, g_, u, w = m[order], g_[order], u[order], w[order]
    starts = np.flatnonzero(np.r_[True, m[1:] != m[:-1]])
    before = np.cumsum(w) - w  # weight shed before this unit, counted from the member's first
    before -= np.repeat(before[starts], np.diff(np.r_[starts, len(m)]))
    shed = before < excess[m]
    for gi in np.unique(g_[shed]).tolist():
        here = shed & (g_ == gi)
        owners[gi][u[here]] = -1
    np.subtract.at(weight, m[shed], w[shed])


def _place(data: LoadData, owners: list[np.ndarray], weight: np.ndarray, budget: TimeBudget) -> None:
    """Step 3: free units heaviest first, each where it ends lightest, (W + w) / c (the lowest
    member id on a tie)."""
    free_group, free_unit, free_weight = [], [], []
    for g, (group, owner) in enumerate(zip(data.groups, owners, strict=True)):
        free = np.flatnonzero(owner < 0)
        if len(free) and len(group.eligible):
            free_group.append(np.full(len(free), g, np.int64))
            free_unit.append(free)
            free_weight.append(group.min_weight()[free])
    if not free_group:
        return
    g_all, u_all, w_all = (np.concatenate(a) for a in (free_group, free_unit, free_weight))
    order = np.lexsort((u_all, g_all, -w_all))
    capacity = data.capacity.tolist()
    sets = len({id(data.groups[g].eligible) for g in np.unique(g_all).tolist()})
    lightest: _Lightest = _ScannedLightest(data, weight) if sets >= SCAN_FROM_SETS else _HeapLightest(data, weight)
    units = zip(g_all[order].tolist(), u_all[order].tolist(), w_all[order].tolist(), strict=True)
    for step, (g, u, unit_weight) in enumerate(units):
        if step % CHECK_EVERY == CHECK_EVERY - 1:
            budget.check("the load heuristic")
        group = data.groups[g]
        best: tuple[float, int] | None = None
        for m in lightest.per_capacity(g):
            key = (lightest.load(m) + unit_weight) / capacity[m]
            if best is None or (key, m) < best:
                best = (key, m)
        assert best is not None
        m = best[1]
        if len(group.weight) == 1:
            lightest.add(m, unit_weight)
        else:  # a join unit weighs, for m, the partitions of it that m reads
            lightest.add(m, int(group.weight_for(int(np.flatnonzero(group.eligible == m)[0]))[u]))
        owners[g][u] = m
    weight[:] = lightest.loads()


class _Lightest(Protocol):
    """The members' weights W, and per topic group the lightest eligible member of each capacity
    (the lowest id on a tie)."""

    def per_capacity(self, g: int) -> list[int]: ...
    def load(self, m: int) -> int: ...
    def add(self, m: int, w: int) -> None: ...
    def loads(self) -> list[int]: ...


class _HeapLightest:
    """One heap of (W, member) per eligible set and capacity, re-keyed lazily: a member's W only
    rises, so a head whose key is stale is pushed down until a fresh one surfaces. Cheap while a
    member belongs to few eligible sets."""

    def __init__(self, data: LoadData, weight: np.ndarray) -> None:
        self.data, self.weights = data, weight.tolist()
        self.heaps: dict[int, list[list[tuple[int, int]]]] = {}

    def per_capacity(self, g: int) -> list[int]:
        eligible = self.data.groups[g].eligible
        classes = self.heaps.get(id(eligible))
        if classes is None:
            by_capacity: dict[int, list[tuple[int, int]]] = {}
            for m in eligible.tolist():
                by_capacity.setdefault(int(self.data.capacity[m]), []).append((self.weights[m], m))
            classes = self.heaps[id(eligible)] = list(by_capacity.values())
            for heap in classes:
                heapq.heapify(heap)
        self.last = classes
        return [self._fresh_head(heap) for heap in classes]

    def _fresh_head(self, heap: list[tuple[int, int]]) -> int:
        while True:
            key, m = heap[0]
            if key == self.weights[m]:
                return m
            heapq.heapreplace(heap, (self.weights[m], m))

    def load(self, m: int) -> int:
        return self.weights[m]

    def add(self, m: int, w: int) -> None:
        self.weights[m] += w
        for heap in self.last:  # the chosen member is the head of one of them
            if heap[0][1] == m:
                heapq.heapreplace(heap, (self.weights[m], m))
                return

    def loads(self) -> list[int]:
        return self.weights


class _ScannedLightest:
    """Per topic group, its eligible members of each capacity in ascending order; the lightest is
    found by one scan (numpy's argmin keeps the first on a tie). Cheap when members belong to
    many eligible sets, where lazy heaps would keep re-keying them."""

    def __init__(self, data: LoadData, weight: np.ndarray) -> None:
        self.data, self.weights = data, weight.copy()
        self.classes: dict[int, list[np.ndarray]] = {}

    def per_capacity(self, g: int) -> list[int]:
        classes = self.classes.get(g)
        if classes is None:
            members = np.sort(self.data.groups[g].eligible)
            capacity = self.data.capacity[members]
            classes = self.classes[g] = [members[capacity == c] for c in np.unique(capacity).tolist()]
        return [int(members[np.argmin(self.weights[members])]) for members in classes]

    def load(self, m: int) -> int:
        return int(self.weights[m])

    def add(self, m: int, w: int) -> None:
        self.weights[m] += w

    def loads(self) -> list[int]:
        return self.weights.tolist()


def _repair(data: LoadData, owners: list[np.ndarray], weight: np.ndarray, limit: Fraction, budget: TimeBudget) -> None:
    """Step 4: moves off the bottleneck member while it is above `limit` and a move lowers it."""
    capacity = data.capacity.astype(np.float64)
    budget = budget.share(LOAD_REPAIR_SHARE)
    for _ in range(REPAIR_ROUNDS_PER_MEMBER * data.member_count):
        if budget.expired():
            return
        normalized = weight / capacity
        top = int(np.argmax(normalized))
        peak = float(normalized[top])
        if Fraction(int(weight[top]), int(data.capacity[top])) <= limit:
            return
        # (moves added, new peak of the pair, group, unit, receiver)
        best: tuple[int, float, int, int, int] | None = None
        for g, (group, owner) in enumerate(zip(data.groups, owners, strict=True)):
            mine = np.flatnonzero(owner == top)
            others = group.eligible[group.eligible != top]
            if not len(mine) or not len(others):
                continue
            if len(group.weight) == 1:
                others = _lightest_per_capacity(others, weight, data.capacity)
            leaving = data.unit_weights_of(g, owner)[mine]
            rows = np.searchsorted(group.eligible, others) if len(group.weight) > 1 else np.zeros(len(others), np.int64)
            arriving = (
                group.weight[rows][:, mine]
                if len(group.weight) > 1
                else np.broadcast_to(leaving, (len(others), len(mine)))
            )
            after = (weight[others][:, None] + arriving) / capacity[others][:, None]
            pair = np.maximum(after, ((weight[top] - leaving) / capacity[top])[None, :])
            found = _cheapest_move(pair, peak, group.claimant[mine] == top)
            if found is not None and (best is None or found[:2] < best[:2]):
                best = (found[0], found[1], g, int(mine[found[3]]), int(others[found[2]]))
        if best is None:
            return
        _, _, g, unit, receiver = best
        moved = data.unit_weights_of(g, owners[g])[unit]
        owners[g][unit] = receiver
        weight[top] -= moved
        weight[receiver] += data.unit_weights_of(g, owners[g])[unit]


def _cheapest_move(pair: np.ndarray, peak: float, kept: np.ndarray) -> tuple[int, float, int, int] | None:
    """Of the moves (receiver row, unit column) that lower the peak, one adding no move (a unit
    the bottleneck member does not keep) when there is one, then the lowest new peak of the pair:
    (moves added, that peak, row, column), or None."""
    lowers = pair < peak
    for added, columns in ((0, ~kept), (1, kept)):
        candidates = np.where(lowers & columns[None, :], pair, np.inf)
        r, u = np.unravel_index(int(np.argmin(candidates)), candidates.shape)
        if candidates[r, u] < np.inf:
            return added, float(candidates[r, u]), int(r), int(u)
    return None


def _lightest_per_capacity(members: np.ndarray, weight: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Of `members`, the lightest of each capacity: where a unit weighing the same for all ends
    lightest is always one of them."""
    order = np.lexsort((members, weight[members], capacity[members]))
    ranked = members[order]
    first = np.r_[True, capacity[ranked][1:] != capacity[ranked][:-1]]
    return np.sort(ranked[first])
