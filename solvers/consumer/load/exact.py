"""Balance `load` solved exactly with CP-SAT, level by level, for groups small enough to prove.

One boolean per (unit, eligible member). W_m, a member's weight, is a sum of unit weights; the
normalized load W_m / c_m is a fraction, so no objective is written with it: "the bottleneck is
below a/b" is the integer constraint W_m <= ceil(a c_m / b) - 1 on every member, and

1. L* is found by tightening: solve, read the answer's bottleneck, ask for a strictly smaller one,
   until CP-SAT proves there is none (the last answer's bottleneck is L*); a first solve that
   minimises z with S W_m <= z c_m (S a scale that keeps z within 64 bits) starts it close;
2. with W_m <= floor((1 + load_tolerance) L* c_m), the most partitions kept (fewest moves);
3. with that many kept, the bottleneck tightened again, then the least sum of W_m^2 / c_m (as
   sum of (lcm(c) / c_m) W_m^2, when that fits 64 bits), then the fewest partitions read off-rack
   (KIP-881): best effort, each kept only when CP-SAT proves it.

Each solve is a fresh model with its own caps (a cap proven infeasible must not stay).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from ortools.sat.python import cp_model

from stickyd.models.consumer.index import ConsumerIndex
from stickyd.solvers.consumer.load.data import LoadData, kept_by, off_rack
from stickyd.solvers.errors import SolveTimeout
from stickyd.solvers.time_policy import LOAD_BUILD_S_PER_PAIR

EXACT_MAX_PAIRS = 4_000
"""most (unit, eligible member) pairs the exact model takes; larger groups take the heuristic."""
SCALE_ROOM = 10**9
"""S x total weight stays below this: z's domain small enough for CP-SAT's search, z x capacity
far within 64 bits."""


@dataclass(frozen=True)
class ExactLoad:
    owners: list[np.ndarray]
    bottleneck: Fraction | None
    """L*, when proven."""
    moves: int | None
    """the level-2 optimum, when proven."""
    moves_bound: int | None
    """a proven lower bound on the level-2 moves (CP-SAT's bound), when level 1 is proven."""


def pair_count(data: LoadData) -> int:
    return sum(len(g.eligible) * g.weight.shape[1] for g in data.groups)


class LoadModel:
    """One CP-SAT model of the group with caps on the members' weights."""

    def __init__(
        self, data: LoadData, index: ConsumerIndex, caps: list[int] | None, min_kept: int | None, deadline: float
    ) -> None:
        if time.monotonic() + LOAD_BUILD_S_PER_PAIR * pair_count(data) >= deadline:
            raise SolveTimeout("no time left to build the exact load model")
        self.data = data
        self.model = cp_model.CpModel()
        model = self.model
        self.choices: list[tuple[int, int, int, cp_model.IntVar]] = []
        terms: list[list[tuple[int, cp_model.IntVar]]] = [[] for _ in range(data.member_count)]
        kept: list[tuple[int, cp_model.IntVar]] = []
        misses: list[tuple[int, cp_model.IntVar]] = []
        for g, group in enumerate(data.groups):
            claims = index.groups[g].claims
            for row, m in enumerate(group.eligible.tolist()):
                weights = group.weight_for(row).tolist()
                keeps = kept_by(claims, m).tolist()
                off = off_rack(index, g, m)
                for u in range(len(weights)):
                    x = model.new_bool_var(f"unit_{g}_{u}_to_{m}")
                    self.choices.append((g, u, m, x))
                    terms[m].append((weights[u], x))
                    if keeps[u]:
                        kept.append((keeps[u], x))
                    if off[u]:
                        misses.append((off[u], x))
        by_unit: dict[tuple[int, int], list[cp_model.IntVar]] = {}
        for g, u, _, x in self.choices:
            by_unit.setdefault((g, u), []).append(x)
        # each unit (a partition, or KIP-315 partition number p of a join) goes to exactly one member
        for xs in by_unit.values():
            model.add_exactly_one(xs)
        self.total = sum(int(g.weight.max(axis=0).sum()) for g in data.groups if g.weight.size)
        self.weight = []
        for m, member_terms in enumerate(terms):
            w = model.new_int_var(0, self.total, f"weight_{m}")
            # a member's weight: what the partitions it gets weigh
            model.add(w == sum(c * x for c, x in member_terms))
            if caps is not None:
                # its normalized load stays under the level's bottleneck
                model.add(w <= caps[m])
            self.weight.append(w)
        self.kept = sum(c * x for c, x in kept)
        self.misses = sum(c * x for c, x in misses) if misses else None
        self.caps = caps
        if min_kept is not None:
            # as many partitions stay with their owner as the stickiness level proved possible
            model.add(self.kept >= min_kept)

    def minimise_scaled_bottleneck(self) -> None:
        """Objective: z with S W_m <= z c_m, the bottleneck rounded up to 1/S (a head start)."""
        scale = max(1, SCALE_ROOM // max(self.total, 1))
        z = self.model.new_int_var(0, scale * self.total, "scaled_bottleneck")
        for w, c in zip(self.weight, self.data.capacity.tolist(), strict=True):
            # the bottleneck, scaled, is at least every member's normalized load
            self.model.add(scale * w <= c * z)
        self.model.minimize(z)

    def minimise_spread(self) -> bool:
        """Objective: sum over members of (lcm(c) / c_m) W_m^2, i.e. of W_m^2 / c_m scaled to
        integers; False (no objective) when the caps are missing or it could pass 64 bits."""
        capacity = self.data.capacity.tolist()
        scale = math.lcm(*capacity)
        if (
            self.caps is None
            or sum(scale // c * cap * cap for c, cap in zip(capacity, self.caps, strict=True)) >= 2**62
        ):
            return False
        terms = []
        for m, (w, cap) in enumerate(zip(self.weight, self.caps, strict=True)):
            square = self.model.new_int_var(0, max(cap, 0) ** 2, f"weight_squared_{m}")
            # evenness: a member's weight squared, over its capacity
            self.model.add_multiplication_equality(square, [w, w])
            terms.append(scale // capacity[m] * square)
        self.spread = sum(terms)
        self.model.minimize(self.spread)
        return True

    def solve(self, deadline: float) -> tuple[list[np.ndarray], bool, float] | None:
        """(owners, proven optimal, objective bound), None when infeasible; SolveTimeout when
        the deadline passes with no answer."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise SolveTimeout("no time left for the exact load model")
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = left
        solver.parameters.num_workers = 1
        status = solver.solve(self.model)
        if status == cp_model.INFEASIBLE:
            return None
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            raise SolveTimeout(f"CP-SAT ended with {solver.status_name(status)}")
        owners = [np.full(g.weight.shape[1], -1, dtype=np.int64) for g in self.data.groups]
        for g, u, m, x in self.choices:
            if solver.boolean_value(x):
                owners[g][u] = m
        return owners, status == cp_model.OPTIMAL, solver.best_objective_bound


def bottleneck_of(data: LoadData, owners: list[np.ndarray]) -> Fraction:
    weight = data.member_weights(owners).tolist()
    return max(Fraction(w, c) for w, c in zip(weight, data.capacity.tolist(), strict=True))


def kept_of(index: ConsumerIndex, owners: list[np.ndarray]) -> int:
    return sum(
        int(((g.claims == o[None, :]) & (g.claims >= 0)).sum()) for g, o in zip(index.groups, owners, strict=True)
    )


def below(data: LoadData, bottleneck: Fraction, ceiling: list[int] | None = None) -> list[int]:
    """caps W_m <= ceil(bottleneck c_m) - 1: a normalized load strictly below `bottleneck`."""
    caps = [math.ceil(bottleneck * c) - 1 for c in data.capacity.tolist()]
    return caps if ceiling is None else [min(a, b) for a, b in zip(caps, ceiling, strict=True)]


def tighten(
    data: LoadData,
    index: ConsumerIndex,
    owners: list[np.ndarray],
    deadline: float,
    ceiling: list[int] | None = None,
    min_kept: int | None = None,
) -> tuple[list[np.ndarray], bool]:
    """Ask for a strictly smaller bottleneck until CP-SAT proves there is none; (the best owners,
    whether their bottleneck is proven the smallest). Stops unproven at the deadline."""
    while True:
        try:
            caps = below(data, bottleneck_of(data, owners), ceiling)
            found = LoadModel(data, index, caps, min_kept, deadline).solve(deadline)
        except SolveTimeout:
            return owners, False
        if found is None:
            return owners, True
        owners = found[0]


def solve_load_exact(data: LoadData, index: ConsumerIndex, start: list[np.ndarray], deadline: float) -> ExactLoad:
    """The levels of balance `load` (see the module's docstring), from `start` (a valid answer)."""
    head = LoadModel(data, index, None, None, deadline)
    if head.total * max(1, SCALE_ROOM // max(head.total, 1)) <= SCALE_ROOM:
        head.minimise_scaled_bottleneck()
        try:
            found = head.solve(min(deadline, time.monotonic() + (deadline - time.monotonic()) / 3))
        except SolveTimeout:
            found = None  # only a head start: tightening from `start` proves L* all the same
        if found is not None and bottleneck_of(data, found[0]) < bottleneck_of(data, start):
            start = found[0]
    owners, proven = tighten(data, index, start, deadline)
    if not proven:
        return ExactLoad(owners, None, None, None)
    best = bottleneck_of(data, owners)
    limit = (1 + data.tolerance) * best
    caps = [math.floor(limit * c) for c in data.capacity.tolist()]
    try:
        sticky = LoadModel(data, index, caps, None, deadline)
        sticky.model.maximize(sticky.kept)
        found = sticky.solve(deadline)
    except SolveTimeout:
        return ExactLoad(owners, best, None, None)
    if found is None:  # cannot happen: the level-1 answer is within the caps
        return ExactLoad(owners, best, None, None)
    sticky_owners, optimal, kept_bound = found
    moves_bound = index.owned - math.floor(kept_bound + 1e-6)
    if not optimal:
        return ExactLoad(sticky_owners, best, None, max(0, moves_bound))
    kept = kept_of(index, sticky_owners)
    even, _ = tighten(data, index, sticky_owners, deadline, caps, kept)
    return ExactLoad(polish(data, index, even, kept, deadline), best, index.owned - kept, index.owned - kept)


def spread_of(data: LoadData, owners: list[np.ndarray]) -> int:
    """sum over members of (lcm(c) / c_m) W_m^2, as the exact model's spread objective counts it."""
    capacity = data.capacity.tolist()
    scale = math.lcm(*capacity)
    weights = data.member_weights(owners).tolist()
    return sum(scale // c * w * w for c, w in zip(capacity, weights, strict=True))


def polish(
    data: LoadData, index: ConsumerIndex, owners: list[np.ndarray], kept: int, deadline: float
) -> list[np.ndarray]:
    """Level 3's sum of W^2 / c, then racks, at the bottleneck and the moves of `owners`: best
    effort (a level not proven in time leaves the answer as it was)."""
    bottleneck = bottleneck_of(data, owners)
    caps = [math.floor(bottleneck * c) for c in data.capacity.tolist()]
    try:
        model = LoadModel(data, index, caps, kept, deadline)
        if model.minimise_spread():
            found = model.solve(deadline)
            if found is None or not found[1]:
                return owners
            owners = found[0]
            # the spread held at its optimum for the racks (measured in integers: CP-SAT's
            # objective is a float, inexact beyond 2^53)
            model.model.add(model.spread <= spread_of(data, owners))
        if model.misses is not None:
            model.model.clear_objective()
            model.model.minimize(model.misses)
            found = model.solve(deadline)
            if found is not None and found[1]:
                owners = found[0]
    except SolveTimeout:
        pass
    return owners
