"""Balance `per_topic` solved exactly with CP-SAT, for groups small enough to prove.

One boolean per (unit, eligible member); levels (docs/wire-format.md, "per_topic"):
1. every eligible member gets floor or ceil of each topic group's units (always reachable: hard);
2. the fewest squared total loads (partitions);
3. the most partitions kept (fewest moves);
4. then the fewest partitions read off-rack (KIP-881).
Each level is solved, then held at its optimum while the next is solved.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from stickyd.models.consumer.balance import per_topic_bounds
from stickyd.models.consumer.index import ConsumerIndex
from stickyd.solvers.consumer.load.data import kept_by, off_rack
from stickyd.solvers.errors import SolveTimeout
from stickyd.solvers.time_policy import PER_TOPIC_BUILD_S_PER_PAIR

PER_TOPIC_MAX_PAIRS = 6_000
"""most (unit, eligible member) pairs the exact model takes."""


def per_topic_pairs(index: ConsumerIndex) -> int:
    return sum(len(g.eligible) * g.units for g in index.groups)


def solve_per_topic_cpsat(index: ConsumerIndex, deadline: float) -> list[np.ndarray]:
    """Owners optimal at every level; SolveTimeout when a level is not proven by `deadline`."""
    if time.monotonic() + PER_TOPIC_BUILD_S_PER_PAIR * per_topic_pairs(index) >= deadline:
        raise SolveTimeout("no time left to build the per-topic model")
    model = cp_model.CpModel()
    n = index.member_count
    choices: list[tuple[int, int, int, cp_model.IntVar]] = []
    load_terms: list[list[tuple[int, cp_model.IntVar]]] = [[] for _ in range(n)]
    kept_terms: list[tuple[int, cp_model.IntVar]] = []
    miss_terms: list[tuple[int, cp_model.IntVar]] = []
    for g, group in enumerate(index.groups):
        if not group.units:
            continue
        low, high = per_topic_bounds(group)
        for m in group.eligible:
            keeps = kept_by(group.claims, m).tolist()
            misses = off_rack(index, g, m)
            mine = [model.new_bool_var(f"unit_{g}_{u}_to_{m}") for u in range(group.units)]
            # per topic: this member gets floor or ceil of the group's units over its eligible members
            model.add_linear_constraint(sum(mine), low, high)
            for u, x in enumerate(mine):
                choices.append((g, u, m, x))
                load_terms[m].append((group.weight, x))
                if keeps[u]:
                    kept_terms.append((keeps[u], x))
                if misses[u]:
                    miss_terms.append((misses[u], x))
    by_unit: dict[tuple[int, int], list[cp_model.IntVar]] = {}
    for g, u, _, x in choices:
        by_unit.setdefault((g, u), []).append(x)
    # each unit goes to exactly one eligible member
    for xs in by_unit.values():
        model.add_exactly_one(xs)
    total = sum(g.units * g.weight for g in index.groups)
    squares = []
    for m, terms in enumerate(load_terms):
        load = model.new_int_var(0, total, f"load_{m}")
        # a member's total load: the partitions its units give it
        model.add(load == sum(c * x for c, x in terms))
        square = model.new_int_var(0, total * total, f"load_squared_{m}")
        model.add_multiplication_equality(square, [load, load])
        squares.append(square)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    # then the totals: the most even loads the per-topic spread allows
    spread = sum(squares)
    _settle(model, solver, spread, deadline, maximise=False)
    # then stickiness: the most partitions kept
    kept = sum(c * x for c, x in kept_terms)
    _settle(model, solver, kept, deadline, maximise=True)
    if miss_terms:
        # then racks: the fewest partitions read from another rack than the member's
        _settle(model, solver, sum(c * x for c, x in miss_terms), deadline, maximise=False)
    owners = [np.full(g.units, -1, dtype=np.int64) for g in index.groups]
    for g, u, m, x in choices:
        if solver.boolean_value(x):
            owners[g][u] = m
    return owners


def _settle(model: cp_model.CpModel, solver: cp_model.CpSolver, expr: Any, deadline: float, maximise: bool) -> None:
    """Optimise one level and hold it at its optimum for the next."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise SolveTimeout("no time left for the per-topic model")
    model.clear_objective()
    if maximise:
        model.maximize(expr)
    else:
        model.minimize(expr)
    solver.parameters.max_time_in_seconds = left
    status = solver.solve(model)
    if status != cp_model.OPTIMAL:
        raise SolveTimeout(f"CP-SAT ended with {solver.status_name(status)} before proving a level")
    value = round(solver.objective_value)
    model.add(expr >= value if maximise else expr <= value)
    model.clear_hints()
