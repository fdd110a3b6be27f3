"""KIP-54's sticky heuristic (Kafka's AbstractStickyAssignor, general path), over units.

The six steps of KIP-54, as Kafka and kafka-python run them:
  1. keep current claims that are still valid (resolved by generation, KIP-341);
  2. give each unassigned partition to the least-loaded consumer that can take it;
  3. (fixed partitions and consumers are kept in place: here they never move anyway);
  4. walk the reassignable partitions (fewest potential consumers first, or round robin over
     owners when subscriptions are identical) and move one to the least-loaded consumer
     whenever its owner has more than one partition above that consumer, until balanced;
  5. if step 4 moved something but did not lower the balance score, revert it;
  6. re-add the fixed assignments.

Differences from Kafka, on purpose: loads count partitions, so a KIP-315 unit of w partitions
moves only when its owner is more than w above the receiver; the balance check is computed per
topic group instead of per partition (same answer, cheaper); there is no second-generation
"prevAssignment" tie-break.
"""

from __future__ import annotations

import heapq

import numpy as np

from stickyd.models.consumer.index import ConsumerIndex
from stickyd.solvers.budget import TimeBudget

Unit = tuple[int, int]
"""(group index, partition number)."""


NOBODY = np.iinfo(np.int64).max
"""the load a member that may not take a unit is given when looking for the least loaded."""
CHECK_EVERY = 2048
"""loop iterations between two looks at the clock."""


def solve_sticky(index: ConsumerIndex, budget: TimeBudget | None = None) -> list[np.ndarray]:
    """Raises SolveTimeout when `budget` is spent before it is done (its long loops ask it every
    CHECK_EVERY steps); without a budget it runs to the end."""
    return _StickyRun(index, budget).run()


class _StickyRun:
    def __init__(self, index: ConsumerIndex, budget: TimeBudget | None = None) -> None:
        self.index = index
        self.budget = budget
        self.ticks = 0
        n = index.member_count
        self.owners = [np.full(g.units, -1, dtype=np.int64) for g in index.groups]
        self.weight = [g.weight for g in index.groups]
        self.eligible = [set(g.eligible) for g in index.groups]
        self.load = [0] * n
        self.loads = np.zeros(n, dtype=np.int64)
        """the same loads as an array, for the vectorised balance check."""
        self.count = np.zeros((len(index.groups), n), dtype=np.int64)
        """units of group g held by member m."""
        self.may_take = np.zeros((len(index.groups), n), dtype=bool)
        for g, group in enumerate(index.groups):
            self.may_take[g, list(group.eligible)] = True
        self.units = np.array([g.units for g in index.groups], dtype=np.int64)
        self.capacity = (self.may_take * (self.units * np.array(self.weight, dtype=np.int64))[:, None]).sum(axis=0)

    def run(self) -> list[np.ndarray]:
        fresh = self._keep_valid_claims()
        order = self._sorted_units(fresh)
        # step 2: unassigned partitions go to the least-loaded consumer that can take them
        for g, p in order:
            self._tick()
            if self.owners[g][p] < 0:
                self._give((g, p), self._least_loaded(g))
        before = [o.copy() for o in self.owners]
        score_before = self._balance_score()
        moved = self._perform_reassignments([u for u in order if len(self.eligible[u[0]]) > 1])
        # step 5: a reassignment that did not improve balance is reverted in favour of stickiness
        if moved and not fresh and self._balance_score() >= score_before:
            return before
        return self.owners

    def _keep_valid_claims(self) -> bool:
        """Step 1: current owners whose claim is still valid keep their partitions."""
        n = self.index.member_count
        for g, group in enumerate(self.index.groups):
            eligible = np.zeros(n + 1, dtype=bool)
            eligible[list(group.eligible)] = True
            claims = np.where(eligible[group.claims], group.claims, -1)
            if claims.shape[0] == 1:
                self.owners[g][:] = claims[0]
                continue
            for p in np.flatnonzero((claims >= 0).any(axis=0)).tolist():
                self._tick()
                claimants = [int(m) for m in claims[:, p] if m >= 0]
                # a unit goes back to whoever claimed most of it (lowest id on a tie)
                self.owners[g][p] = max(set(claimants), key=lambda m: (claimants.count(m), -m))
        for g, owner in enumerate(self.owners):
            self.count[g] = np.bincount(owner[owner >= 0], minlength=n)
        self.loads = (self.count * np.array(self.weight, dtype=np.int64)[:, None]).sum(axis=0)
        self.load = self.loads.tolist()
        return not any(int(c.sum()) for c in self.count)

    def _sorted_units(self, fresh: bool) -> list[Unit]:
        units = [(g, p) for g, group in enumerate(self.index.groups) for p in range(group.units)]
        identical = len(set(self.index.subscriptions)) == 1
        if fresh or not identical:
            return sorted(units, key=lambda u: len(self.eligible[u[0]]))
        # identical subscriptions: round robin over owners, the most loaded first
        held: dict[int, list[Unit]] = {}
        for g, owner in enumerate(self.owners):
            for p in np.flatnonzero(owner >= 0).tolist():
                held.setdefault(int(owner[p]), []).append((g, p))
        heap = [(-len(v), -m, m) for m, v in held.items()]
        heapq.heapify(heap)
        order: list[Unit] = []
        cursor = dict.fromkeys(held, 0)
        while heap:
            self._tick()
            size, tie, m = heapq.heappop(heap)
            order.append(held[m][cursor[m]])
            cursor[m] += 1
            if size + 1 < 0:
                heapq.heappush(heap, (size + 1, tie, m))
        listed = set(order)
        return order + [u for u in units if u not in listed]

    def _perform_reassignments(self, reassignable: list[Unit]) -> bool:
        moved = False
        balanced = self._is_balanced()
        while True:
            changed = False
            for g, p in reassignable:
                if balanced:
                    break
                self._tick()
                owner = int(self.owners[g][p])
                target = self._least_loaded(g)
                if self.load[owner] > self.load[target] + self.weight[g]:
                    self._take((g, p), owner)
                    self._give((g, p), target)
                    changed = moved = True
                    balanced = self._is_balanced()
            if not changed or balanced:
                return moved

    def _tick(self) -> None:
        self.ticks += 1
        if self.budget is not None and self.ticks % CHECK_EVERY == 0:
            self.budget.check("the KIP-54 heuristic")

    def _is_balanced(self) -> bool:
        """KIP-54: loads differ by at most one, or no partition can move to a consumer with
        fewer partitions than its owner (per group: no eligible member with room below the most
        loaded holder), checked over all groups and members at once."""
        if int(self.loads.max()) - int(self.loads.min()) <= 1:
            return True
        holders = self.count > 0
        top = np.where(holders, self.loads[None, :], -1).max(axis=1)
        room = self.may_take & (self.count < self.units[:, None]) & (self.loads < self.capacity)[None, :]
        return not bool((room & (self.loads[None, :] < top[:, None])).any())

    def _balance_score(self) -> int:
        """Sum over consumer pairs of the difference of their loads."""
        loads = np.sort(np.array(self.load, dtype=np.int64))
        n = len(loads)
        return int(((2 * np.arange(n) - n + 1) * loads).sum())

    def _least_loaded(self, g: int) -> int:
        """The eligible member with the fewest partitions, the lowest id among equals."""
        m = int(np.where(self.may_take[g], self.loads, NOBODY).argmin())
        if not self.may_take[g, m]:
            raise RuntimeError("a unit with no eligible consumer")
        return m

    def _give(self, unit: Unit, m: int) -> None:
        g, p = unit
        self.owners[g][p] = m
        self._shift(m, self.weight[g])
        self.count[g, m] += 1

    def _take(self, unit: Unit, m: int) -> None:
        g, p = unit
        self.owners[g][p] = -1
        self._shift(m, -self.weight[g])
        self.count[g, m] -= 1

    def _shift(self, m: int, delta: int) -> None:
        self.load[m] += delta
        self.loads[m] += delta
