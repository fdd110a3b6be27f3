"""CP-SAT for what a flow cannot express: members whose units weigh differently.

A member that reads both topics of a join (2 partitions per unit) and a plain topic (1 per
unit) has a load that is a weighted sum, so its squared load is not a flow cost. The model
still works on classes of interchangeable units, with integer counts, and is solved
lexicographically: balance (on a smaller model of its own, `consumer_balance`), then moves,
then racks, each level proven before the next, each hinted with the level above's answer.
"""

from __future__ import annotations

import math
import time

import numpy as np
from ortools.sat.python import cp_model

from models.consumer_index import ConsumerIndex
from solvers.budget import TimeBudget
from solvers.consumer_balance import UNARY_STEPS_LIMIT, least_squares, load_ranges, squared, squares_of
from solvers.consumer_classes import UnitClasses, materialize
from solvers.consumer_same_counts import fewest_moves_same_counts
from solvers.consumer_split_bound import SplitBound, moves_within
from solvers.consumer_sticky import solve_sticky
from solvers.errors import SolverFailure, SolveTimeout


def solve_cpsat(
    index: ConsumerIndex,
    unit_classes: UnitClasses,
    *,
    max_imbalance: int,
    deadline: float,
    split: SplitBound | None = None,
) -> list[np.ndarray]:
    """`split`: the split relaxation's bounds (balance, and moves at that balance), with
    max_imbalance 0: CP-SAT stops where it reaches them."""
    # balance first: the most even loads the subscriptions allow (proven on its own small model)
    heuristic = solve_sticky(index, TimeBudget(deadline))
    least, reaching = least_squares(index, unit_classes, deadline, split.squares if split else None, heuristic)
    racks = any(pool.rack_miss for pool in unit_classes.pools)
    if squares_of(index, heuristic) == least:
        # the KIP-54 answer is balanced: with the same units per weight for every member (the
        # same loads) a flow moves as few as can be, and that is the better hint
        heuristic = fewest_moves_same_counts(index, heuristic, deadline)
        reaching = counts_of(unit_classes, heuristic, index.member_count)
        exact = split is not None and split.squares == least and not racks and not max_imbalance
        if exact and split is not None and moves_of(index, heuristic) == split.moves:
            # balanced and moving as few as the relaxation: optimal, no model needed
            return heuristic
    if max_imbalance:
        model = ConsumerCpModel(index, unit_classes, deadline)
        balanced = _Solved(least, {key: reaching.get(key, 0) for key in model.take})
        model.last = balanced
        low = min(model.solved_loads(balanced), default=0)
        high = max(model.solved_loads(balanced), default=0)
        model.bound_loads(max(0, low - max_imbalance), high + max_imbalance)
        squares = model.sum_of_squares((max(0, low - max_imbalance), high + max_imbalance))
        # sticky yet fair: fewest moves, then most even, then racks
        model.minimise(model.moves(), deadline)
        model.minimise(squares, deadline)
    else:
        # the next levels keep the balance at its optimum: each member within the loads it
        # carries in balanced assignments where those are known (then, when each range is at
        # most two loads wide, the squares are linear in the loads), else within sqrt(spread)
        # of the mean, where spread = least - total^2 / members
        ranges = load_ranges(index, deadline, least, heuristic)
        floor, within = _moves_floor(index, split, least, ranges, deadline)
        if not racks:
            # a balanced answer that moves no more than the relaxations' floor is optimal
            if squares_of(index, heuristic) == least and moves_of(index, heuristic) == floor:
                return heuristic
            if within is not None and squares_of(index, within) == least:
                return within
            if _moves_of(unit_classes, reaching) == floor:
                return _materialize(unit_classes, reaching)
        model = ConsumerCpModel(index, unit_classes, deadline)
        balanced = _Solved(least, {key: reaching.get(key, 0) for key in model.take})
        model.last = balanced
        if ranges is not None:
            model.bound_member_loads(ranges)
        if ranges is not None and bool((ranges[:, 1] - ranges[:, 0] <= 1).all()):
            model.model.add(model.narrow_squares(ranges) == least)
        else:
            active = [top for top in model.tops if top]
            total = sum(model.solved_loads(balanced))
            spread = least - total * total / max(len(active), 1)
            mean = total / max(len(active), 1)
            reach = math.isqrt(max(0, math.floor(spread))) + 1
            window = (max(0, math.floor(mean) - reach), math.ceil(mean) + reach)
            model.bound_loads(*window)
            model.model.add(model.sum_of_squares(window) == least)
        moves = model.moves()
        # what the relaxations prove: no balanced assignment moves fewer
        model.model.add(moves >= floor)
        model.minimise(moves, deadline)
    if racks:
        model.minimise(model.rack_misses(), deadline)
    return model.owners()


def _materialize(unit_classes: UnitClasses, counts: dict[tuple[int, int], int]) -> list[np.ndarray]:
    rows = [(c, m, v) for (c, m), v in counts.items() if v]
    direct = tuple(np.array([r[i] for r in rows], dtype=np.int64) for i in range(3))
    empty = np.zeros(0, dtype=np.int64)
    return materialize(unit_classes, direct, (empty, empty, empty))  # type: ignore[arg-type]


def counts_of(unit_classes: UnitClasses, owners: list[np.ndarray], members: int) -> dict[tuple[int, int], int]:
    """Units per (class, member) of an assignment given as owners per group."""
    owner = np.concatenate(owners)[unit_classes.units] if owners else np.zeros(0, np.int64)
    unit_class = np.repeat(np.arange(unit_classes.count, dtype=np.int64), unit_classes.size)
    pairs, counts = np.unique(unit_class * (members + 1) + owner + 1, return_counts=True)
    cls, member = np.divmod(pairs, members + 1)
    return {(c, m - 1): v for c, m, v in zip(cls.tolist(), member.tolist(), counts.tolist(), strict=True) if m > 0}


def moves_of(index: ConsumerIndex, owners: list[np.ndarray]) -> int:
    """Claimed partitions whose unit went to another member (the moves level)."""
    return sum(
        int(((group.claims >= 0) & (group.claims != owner[None, :])).sum())
        for group, owner in zip(index.groups, owners, strict=True)
    )


def _kept_units(unit_classes: UnitClasses) -> dict[tuple[int, int], int]:
    """Units each member already owns, per (class, member)."""
    return dict(
        zip(
            zip(unit_classes.kept_class.tolist(), unit_classes.kept_member.tolist(), strict=True),
            unit_classes.kept_count.tolist(),
            strict=True,
        )
    )


def _moves_of(unit_classes: UnitClasses, counts: dict[tuple[int, int], int]) -> int:
    """Moves of an assignment given as units per (class, member)."""
    kept = _kept_units(unit_classes)
    claimed = unit_classes.class_claimed
    return sum((int(claimed[c]) - kept.get((c, m), 0)) * v for (c, m), v in counts.items())


def _moves_floor(
    index: ConsumerIndex, split: SplitBound | None, least: int, ranges: np.ndarray | None, deadline: float
) -> tuple[int, list[np.ndarray] | None]:
    """A lower bound on the moves of every balanced assignment: the split relaxation's own
    where its balance is the real one, and the relaxation's with every load within the range
    it takes in balanced assignments; and the latter's answer when it keeps units whole."""
    floors = [split.moves if split is not None and split.squares == least else 0]
    within = moves_within(index, ranges, deadline) if ranges is not None else None
    if within is not None:
        floors.append(within.moves)
    return max(floors), within.owners if within is not None else None


class _Solved:
    def __init__(self, objective: int, values: dict[tuple[int, int], int]) -> None:
        self.objective = objective
        self.values = values


class ConsumerCpModel:
    def __init__(self, index: ConsumerIndex, unit_classes: UnitClasses, deadline: float = float("inf")) -> None:
        self.index = index
        self.classes = unit_classes
        self.model = cp_model.CpModel()
        self.take: dict[tuple[int, int], cp_model.IntVar] = {}
        self.weight: dict[tuple[int, int], int] = {}
        self.last: _Solved | None = None
        sizes = unit_classes.size.tolist()
        self.kept = _kept_units(unit_classes)
        for c, (p, size) in enumerate(zip(unit_classes.class_pool.tolist(), sizes, strict=True)):
            if c % 256 == 0 and time.monotonic() > deadline:
                raise SolveTimeout("building the CP-SAT model used up the time limit")
            pool = unit_classes.pools[p]
            group = index.groups[pool.group]
            for m in pool.eligible:
                self.take[c, m] = self.model.new_int_var(0, size, f"take_c{c}_m{m}")
                self.weight[c, m] = group.weight
            # every unit of the class goes to exactly one eligible member
            self.model.add(sum(self.take[c, m] for m in pool.eligible) == size)
        self.loads: list[cp_model.IntVar] = []
        self.tops: list[int] = []
        member_keys: list[list[tuple[int, int]]] = [[] for _ in range(index.member_count)]
        for key in self.take:
            member_keys[key[1]].append(key)
        for m, keys in enumerate(member_keys):
            top = sum(self.weight[k] * sizes[k[0]] for k in keys)
            load = self.model.new_int_var(0, top, f"load_m{m}")
            # a member's load is the partitions it consumes
            self.model.add(load == sum(self.weight[k] * self.take[k] for k in keys))
            self.loads.append(load)
            self.tops.append(top)
        self._order_interchangeable(member_keys)

    def _order_interchangeable(self, member_keys: list[list[tuple[int, int]]]) -> None:
        """Members that claim nothing, may take the same classes and miss the same racks are
        interchangeable at every level: any assignment has a permutation of them, as good at
        every level, whose loads do not increase in id order, so only those are searched."""
        claimants = set(self.kept_members())
        same: dict[tuple[tuple[int, ...], tuple[int, ...]], list[int]] = {}
        for m, keys in enumerate(member_keys):
            if keys and m not in claimants:
                classes = tuple(sorted(c for c, _ in keys))
                misses = tuple(self.classes.pools[int(self.classes.class_pool[c])].rack_miss.get(m, 0) for c in classes)
                same.setdefault((classes, misses), []).append(m)
        for members in same.values():
            for first, second in zip(members, members[1:], strict=False):
                self.model.add(self.loads[first] >= self.loads[second])

    def kept_members(self) -> list[int]:
        return [m for _, m in self.kept]

    def sum_of_squares(self, window: tuple[int, int]) -> cp_model.LinearExprT:
        """Squared loads, for loads already bounded to `window` (each member's load from the
        window's low end, step by step)."""
        low, high = window
        unary = sum(max(0, min(top, high) - low) for top in self.tops if top) <= UNARY_STEPS_LIMIT
        squares: list[cp_model.LinearExprT] = []
        for m, (load, top) in enumerate(zip(self.loads, self.tops, strict=True)):
            if top:
                base = int(min(low, top))
                shifted = self.model.new_int_var(0, max(0, min(top, high) - base), f"above_m{m}")
                self.model.add(shifted == load - base)
                square = squared(self.model, shifted, max(0, min(top, high) - base), f"above_m{m}", unary)
                # (base + x)^2 = base^2 + 2 base x + x^2
                squares.extend([base * base + 2 * base * shifted, square])
        return sum(squares)

    def moves(self) -> cp_model.LinearExprT:
        # a unit moves every claimed partition its new member did not own
        return sum(
            (int(self.classes.class_claimed[c]) - self.kept.get((c, m), 0)) * v for (c, m), v in self.take.items()
        )

    def rack_misses(self) -> cp_model.LinearExprT:
        # KIP-881: a partition read from a rack that holds no replica of it
        return sum(
            self.classes.pools[int(self.classes.class_pool[c])].rack_miss.get(m, 0) * v
            for (c, m), v in self.take.items()
        )

    def bound_member_loads(self, ranges: np.ndarray) -> None:
        for load, top, (low, high) in zip(self.loads, self.tops, ranges.tolist(), strict=True):
            if top > 0:
                # the load this member carries in every balanced assignment
                self.model.add_linear_constraint(load, low, high)

    def narrow_squares(self, ranges: np.ndarray) -> cp_model.LinearExprT:
        """Squared loads, for loads bounded to ranges at most two loads wide: on {a, a + 1},
        x^2 = (2a + 1) x - a (a + 1), linear (so the LP relaxation is exact)."""
        return sum(
            (2 * low + 1) * load - low * (low + 1)
            for load, top, (low, _) in zip(self.loads, self.tops, ranges.tolist(), strict=True)
            if top > 0
        )

    def bound_loads(self, low: int, high: int) -> None:
        for load, top in zip(self.loads, self.tops, strict=True):
            if top > 0:
                # max_imbalance: every load within the balanced optimum's [min - k, max + k]
                self.model.add(load >= min(low, top))
                self.model.add(load <= high)

    def minimise(self, objective: cp_model.LinearExprT, deadline: float, keep: bool = True) -> _Solved:
        left = deadline - time.monotonic()
        if left <= 0:
            raise SolveTimeout("CP-SAT had no time left")
        self.model.clear_objective()
        self.model.minimize(objective)
        if self.last is not None:
            self.model.clear_hints()
            for k, v in self.take.items():
                self.model.add_hint(v, self.last.values[k])
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = left
        # one worker: the same request always gets the same answer (the contract's determinism)
        solver.parameters.num_workers = 1
        # no symmetry detection: on large join groups it ran far past max_time_in_seconds (a
        # 2 s request took 56 s); interchangeable members are ordered by the model instead
        solver.parameters.symmetry_level = 0
        status = solver.solve(self.model)
        if status == cp_model.UNKNOWN or status == cp_model.FEASIBLE:
            raise SolveTimeout("CP-SAT did not prove optimality within the time limit")
        if status != cp_model.OPTIMAL:
            raise SolverFailure(f"CP-SAT ended with status {solver.status_name(status)}")
        value = int(round(solver.objective_value))
        self.last = _Solved(value, {k: int(solver.value(v)) for k, v in self.take.items()})
        if keep:
            # the next level keeps this one at its optimum
            self.model.add(objective == value)
        return self.last

    def solved_loads(self, solved: _Solved) -> list[int]:
        totals = [0] * self.index.member_count
        for (c, m), v in solved.values.items():
            totals[m] += self.weight[c, m] * v
        return [t for m, t in enumerate(totals) if any(k[1] == m for k in self.take)]

    def owners(self) -> list[np.ndarray]:
        if self.last is None:
            raise SolverFailure("CP-SAT was never solved")
        rows = [(c, m, v) for (c, m), v in self.last.values.items() if v]
        direct = tuple(np.array([r[i] for r in rows], dtype=np.int64) for i in range(3))
        empty = np.zeros(0, dtype=np.int64)
        return materialize(self.classes, direct, (empty, empty, empty))  # type: ignore[arg-type]
