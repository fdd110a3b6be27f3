"""The CP-SAT model of a mixed-weight consumer group, over claims and pools (not classes x members).

A unit of a claimed class moves nothing more, wherever it goes, than its claimed partitions,
unless a claimant of that class takes it. So the model, like the min-cost flow, has one integer
per (claimed class, eligible claimant) (`kept`: units its claimant takes back) and one per
(pool, eligible member) (`free`: units a member takes from what nobody claims plus what the
claimants released). Every assignment is a solution with the same loads, moves and rack misses
(claimants take their own units as `kept`), and every solution is an assignment with the same
loads and rack misses and at most its moves (the pool's units are dealt out in any order, a
claimant may get back one of its own), so each level's optimum is the same as with one integer
per (class, member), at a fraction of the size: a group of 82 members and 144 claimed
partitions went from 9,000 integers (a second of presolve) to about 400.
"""

from __future__ import annotations

import time

import numpy as np
from ortools.sat.python import cp_model

from stickyd.models.consumer.index import ConsumerIndex
from stickyd.solvers.consumer.classes import UnitClasses, materialize
from stickyd.solvers.consumer.mixed.balance import UNARY_STEPS_LIMIT, squared
from stickyd.solvers.errors import SolverFailure, SolveTimeout

Counts = dict[tuple[int, int], int]
"""units per (class, member): how the levels' answers and hints are handed over."""


class Solved:
    """A level's optimum and the model's values reaching it: `kept` per (class, claimant),
    `free` per (pool, member)."""

    def __init__(self, objective: int, kept: Counts, free: Counts) -> None:
        self.objective = objective
        self.kept = kept
        self.free = free


class ConsumerCpModel:
    def __init__(self, index: ConsumerIndex, unit_classes: UnitClasses, deadline: float = float("inf")) -> None:
        self.index = index
        self.classes = unit_classes
        self.model = cp_model.CpModel()
        self.last: Solved | None = None
        sizes = unit_classes.size.tolist()
        pool_of = unit_classes.class_pool.tolist()
        self.kept_partitions: Counts = dict(
            zip(
                zip(unit_classes.kept_class.tolist(), unit_classes.kept_member.tolist(), strict=True),
                unit_classes.kept_count.tolist(),
                strict=True,
            )
        )
        self.kept: dict[tuple[int, int], cp_model.IntVar] = {}
        released: dict[int, list[cp_model.LinearExprT]] = {}
        for i, (c, m) in enumerate(self.kept_partitions):
            if i % 256 == 0 and time.monotonic() > deadline:
                raise SolveTimeout("building the CP-SAT model used up the time limit")
            self.kept[c, m] = self.model.new_int_var(0, sizes[c], f"kept_c{c}_m{m}")
        by_class: dict[int, list[cp_model.IntVar]] = {}
        for (c, _), v in self.kept.items():
            by_class.setdefault(c, []).append(v)
        for c, vs in by_class.items():
            # a class's claimants take back at most its units
            self.model.add(sum(vs) <= sizes[c])
        pool_size = np.bincount(unit_classes.class_pool, weights=unit_classes.size, minlength=len(unit_classes.pools))
        for c, vs in by_class.items():
            released.setdefault(pool_of[c], []).extend(vs)
        self.free: dict[tuple[int, int], cp_model.IntVar] = {}
        self.pool_weight: list[int] = []
        for p, pool in enumerate(unit_classes.pools):
            size = int(pool_size[p])
            self.pool_weight.append(index.groups[pool.group].weight)
            for m in pool.eligible:
                self.free[p, m] = self.model.new_int_var(0, size, f"free_p{p}_m{m}")
            # what the claimants do not take back goes to eligible members
            self.model.add(sum(self.free[p, m] for m in pool.eligible) == size - sum(released.get(p, [])))
        self.loads: list[cp_model.IntVar] = []
        self.tops: list[int] = []
        terms: list[list[cp_model.LinearExprT]] = [[] for _ in range(index.member_count)]
        tops = [0] * index.member_count
        for (p, m), v in self.free.items():
            terms[m].append(self.pool_weight[p] * v)
            tops[m] += self.pool_weight[p] * int(pool_size[p])
        for (c, m), v in self.kept.items():
            terms[m].append(self.pool_weight[pool_of[c]] * v)
        for m, parts in enumerate(terms):
            load = self.model.new_int_var(0, tops[m], f"load_m{m}")
            # a member's load is the partitions it consumes
            self.model.add(load == sum(parts))
            self.loads.append(load)
            self.tops.append(tops[m])
        self._order_interchangeable()

    def _order_interchangeable(self) -> None:
        """Members that claim nothing, may take the same pools and miss the same racks are
        interchangeable at every level: any assignment has a permutation of them, as good at
        every level, whose loads do not increase in id order, so only those are searched."""
        claimants = {m for _, m in self.kept}
        pools_of: dict[int, list[int]] = {}
        for p, m in self.free:
            pools_of.setdefault(m, []).append(p)
        same: dict[tuple[tuple[int, ...], tuple[int, ...]], list[int]] = {}
        for m, pools in sorted(pools_of.items()):
            if m not in claimants:
                misses = tuple(self.classes.pools[p].rack_miss.get(m, 0) for p in pools)
                same.setdefault((tuple(pools), misses), []).append(m)
        for members in same.values():
            for first, second in zip(members, members[1:], strict=False):
                self.model.add(self.loads[first] >= self.loads[second])

    def start_from(self, objective: int, counts: Counts) -> Solved:
        """Hint the next level with an assignment given as units per (class, member)."""
        pool_of = self.classes.class_pool.tolist()
        kept: Counts = {}
        free: Counts = {}
        for (c, m), v in counts.items():
            if (c, m) in self.kept:
                kept[c, m] = v
            else:
                free[pool_of[c], m] = free.get((pool_of[c], m), 0) + v
        self.last = Solved(objective, kept, free)
        return self.last

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
        # every claimed partition moves, but those a claimant takes back with its unit
        claimed = int((self.classes.class_claimed * self.classes.size).sum())
        return claimed - sum(self.kept_partitions[key] * v for key, v in self.kept.items())

    def rack_misses(self) -> cp_model.LinearExprT:
        # KIP-881: a partition read from a rack that holds no replica of it
        pool_of = self.classes.class_pool.tolist()
        pools = self.classes.pools
        return sum(pools[p].rack_miss.get(m, 0) * v for (p, m), v in self.free.items()) + sum(
            pools[pool_of[c]].rack_miss.get(m, 0) * v for (c, m), v in self.kept.items()
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

    def minimise(self, objective: cp_model.LinearExprT, deadline: float, keep: bool = True) -> Solved:
        left = deadline - time.monotonic()
        if left <= 0:
            raise SolveTimeout("CP-SAT had no time left")
        self.model.clear_objective()
        self.model.minimize(objective)
        if self.last is not None:
            self.model.clear_hints()
            for key, v in self.kept.items():
                self.model.add_hint(v, self.last.kept.get(key, 0))
            for key, v in self.free.items():
                self.model.add_hint(v, self.last.free.get(key, 0))
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = left
        # one worker: the same request always gets the same answer (the contract's determinism)
        solver.parameters.num_workers = 1
        # no symmetry detection: on large join groups it ran far past max_time_in_seconds (a
        # 2 s request took 56 s); interchangeable members are ordered by the model instead
        solver.parameters.symmetry_level = 0
        # the full LP relaxation (cuts from every constraint, not only the objective's rows): on
        # mixed-weight joins the default's bound stayed below the optimum for tens of seconds
        solver.parameters.linearization_level = 2
        status = solver.solve(self.model)
        if status == cp_model.UNKNOWN or status == cp_model.FEASIBLE:
            raise SolveTimeout("CP-SAT did not prove optimality within the time limit")
        if status != cp_model.OPTIMAL:
            raise SolverFailure(f"CP-SAT ended with status {solver.status_name(status)}")
        value = int(round(solver.objective_value))
        self.last = Solved(
            value,
            {key: int(solver.value(v)) for key, v in self.kept.items()},
            {key: int(solver.value(v)) for key, v in self.free.items()},
        )
        if keep:
            # the next level keeps this one at its optimum
            self.model.add(objective == value)
        return self.last

    def solved_loads(self, solved: Solved) -> list[int]:
        """Loads of the members that may take units, in id order."""
        pool_of = self.classes.class_pool.tolist()
        totals = [0] * self.index.member_count
        for (p, m), v in solved.free.items():
            totals[m] += self.pool_weight[p] * v
        for (c, m), v in solved.kept.items():
            totals[m] += self.pool_weight[pool_of[c]] * v
        return [t for t, top in zip(totals, self.tops, strict=True) if top]

    def owners(self) -> list[np.ndarray]:
        if self.last is None:
            raise SolverFailure("CP-SAT was never solved")
        return materialize(self.classes, _rows(self.last.kept), _rows(self.last.free))


def _rows(counts: Counts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(key, member, count) arrays of the nonzero entries."""
    rows = [(a, m, v) for (a, m), v in counts.items() if v]
    return (
        np.array([r[0] for r in rows], dtype=np.int64),
        np.array([r[1] for r in rows], dtype=np.int64),
        np.array([r[2] for r in rows], dtype=np.int64),
    )
