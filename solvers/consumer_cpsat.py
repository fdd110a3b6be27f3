"""CP-SAT for what a flow cannot express: members whose units weigh differently.

A member that reads both topics of a join (2 partitions per unit) and a plain topic (1 per
unit) has a load that is a weighted sum, so its squared load is not a flow cost. The model
still works on classes of interchangeable units, with integer counts, and is solved
lexicographically: balance, then moves, then racks, each level proven before the next.
"""

from __future__ import annotations

import time

import numpy as np
from ortools.sat.python import cp_model

from models.consumer_index import ConsumerIndex
from solvers.consumer_classes import UnitClasses, materialize
from solvers.errors import SolverFailure, SolveTimeout


def solve_cpsat(
    index: ConsumerIndex, unit_classes: UnitClasses, *, max_imbalance: int, deadline: float
) -> list[np.ndarray]:
    model = ConsumerCpModel(index, unit_classes)
    squares = model.sum_of_squares()
    # balance first: the most even loads the subscriptions allow
    balanced = model.minimise(squares, deadline, keep=max_imbalance == 0)
    if max_imbalance:
        low = min(model.solved_loads(balanced), default=0)
        high = max(model.solved_loads(balanced), default=0)
        model.bound_loads(max(0, low - max_imbalance), high + max_imbalance)
        # sticky yet fair: fewest moves, then most even, then racks
        model.minimise(model.moves(), deadline)
        model.minimise(squares, deadline)
    else:
        model.minimise(model.moves(), deadline)
    model.minimise(model.rack_misses(), deadline)
    return model.owners()


UNARY_STEPS_LIMIT = 200_000
"""Up to this many load steps in all, squared loads are encoded step by step (strong bounds);
beyond, as products (small model, weaker bounds)."""


class _Solved:
    def __init__(self, objective: int, values: dict[tuple[int, int], int]) -> None:
        self.objective = objective
        self.values = values


class ConsumerCpModel:
    def __init__(self, index: ConsumerIndex, unit_classes: UnitClasses) -> None:
        self.index = index
        self.classes = unit_classes
        self.model = cp_model.CpModel()
        self.take: dict[tuple[int, int], cp_model.IntVar] = {}
        self.weight: dict[tuple[int, int], int] = {}
        self.last: _Solved | None = None
        sizes = unit_classes.size.tolist()
        self.kept: dict[tuple[int, int], int] = {
            (c, m): k
            for c, m, k in zip(
                unit_classes.kept_class.tolist(),
                unit_classes.kept_member.tolist(),
                unit_classes.kept_count.tolist(),
                strict=True,
            )
        }
        for c, (p, size) in enumerate(zip(unit_classes.class_pool.tolist(), sizes, strict=True)):
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

    def sum_of_squares(self) -> cp_model.LinearExprT:
        unary = sum(self.tops) <= UNARY_STEPS_LIMIT
        squares: list[cp_model.LinearExprT] = []
        for m, (load, top) in enumerate(zip(self.loads, self.tops, strict=True)):
            if top == 0:
                continue
            if unary:
                # the squared load as the sum of its steps 1, 3, 5, ...: convex, so the LP bound is exact
                steps = [self.model.new_bool_var(f"load_m{m}_ge{k}") for k in range(1, top + 1)]
                for higher, lower in zip(steps[1:], steps, strict=False):
                    self.model.add_implication(higher, lower)
                self.model.add(load == sum(steps))
                squares.append(sum((2 * k - 1) * step for k, step in enumerate(steps, start=1)))
            else:
                square = self.model.new_int_var(0, top * top, f"square_m{m}")
                self.model.add_multiplication_equality(square, [load, load])
                squares.append(square)
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
