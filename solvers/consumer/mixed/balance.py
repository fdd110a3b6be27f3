"""The balance level of mixed-weight groups, proven on a small model of its own.

Balance (the least sum of squared loads) does not depend on claims or racks, only on how many
units of each topic group every member takes. So it is solved over one integer per (group,
eligible member) instead of one per (class of units, member), and members that may take exactly
the same groups, being interchangeable at this level, get non-increasing loads in id order (every
assignment has a permutation of them that does, with the same loads): CP-SAT then proves the
optimum without exploring their permutations. The answer is the level's optimal value and a
per-class assignment reaching it (a hint for the levels below: claimed classes first).
"""

from __future__ import annotations

import math
import time

import numpy as np
from ortools.sat.python import cp_model

from stickyd.models.consumer.index import ConsumerIndex
from stickyd.solvers.budget import TimeBudget
from stickyd.solvers.consumer.classes import UnitClasses
from stickyd.solvers.consumer.kip54_sticky import solve_sticky
from stickyd.solvers.errors import SolverFailure, SolveTimeout

UNARY_STEPS_LIMIT = 200_000
"""Up to this many load steps in all, squared loads are encoded step by step (exact LP bound);
beyond, as products (small model, weaker bounds)."""


LOAD_COUNTS_LIMIT = 20_000
"""The load-count model (one integer per type of interchangeable members and load) is used up
to this many integers; beyond (many types with wide loads), one integer per (group, member)."""


def squared(model: cp_model.CpModel, load: cp_model.IntVar, top: int, name: str, unary: bool) -> cp_model.LinearExprT:
    """`load` squared (0 <= load <= top): as the sum of its steps 1, 3, 5, ... (convex, so the
    LP bound is exact) when `unary`, else as a product."""
    if unary:
        steps = [model.new_bool_var(f"{name}_ge{k}") for k in range(1, top + 1)]
        for higher, lower in zip(steps[1:], steps, strict=False):
            model.add_implication(higher, lower)
        model.add(load == sum(steps))
        return sum((2 * k - 1) * step for k, step in enumerate(steps, start=1))
    square = model.new_int_var(0, top * top, f"{name}_squared")
    model.add_multiplication_equality(square, [load, load])
    return square


def least_squares(
    index: ConsumerIndex,
    unit_classes: UnitClasses,
    deadline: float,
    bound: int | None = None,
    heuristic: list[np.ndarray] | None = None,
) -> tuple[int, dict[tuple[int, int], int]]:
    """(the least sum of squared loads, units per (class, member) reaching it). `bound`: a
    proven lower bound (the split relaxation's); a KIP-54 answer (`heuristic`, else made here)
    that meets it is the optimum."""
    weights = {group.weight for group in index.groups if group.units and group.eligible}
    types = _types(index)
    if heuristic is None:
        heuristic = solve_sticky(index, TimeBudget(deadline))
    if bound is not None and squares_of(index, heuristic) == bound:
        per_group: dict[tuple[int, int], int] = {}
        for g, owner in enumerate(heuristic):
            for m, count in enumerate(np.bincount(owner[owner >= 0], minlength=index.member_count).tolist()):
                if count:
                    per_group[g, m] = count
        return bound, _per_class(index, unit_classes, per_group)
    window = _load_window(index, heuristic, types)
    load_counts = sum(window[1] - window[0] + 1 for _ in types)
    if weights <= {1, 2} and load_counts <= LOAD_COUNTS_LIMIT:
        value, per_group = _least_squares_by_load_counts(index, deadline, window, bound)
    else:
        value, per_group = _least_squares_by_member(index, deadline, window, bound)
    return value, _per_class(index, unit_classes, per_group)


def squares_of(index: ConsumerIndex, owners: list[np.ndarray]) -> int:
    """The sum of squared loads of an assignment (owners per group)."""
    loads = _loads(index, owners)
    return int((loads * loads).sum())


def _loads(index: ConsumerIndex, owners: list[np.ndarray]) -> np.ndarray:
    """Partitions per member of an assignment (owners per group)."""
    loads = np.zeros(index.member_count, dtype=np.int64)
    for group, owner in zip(index.groups, owners, strict=True):
        if group.units:
            loads += group.weight * np.bincount(owner[owner >= 0], minlength=index.member_count)
    return loads


def load_ranges(
    index: ConsumerIndex, deadline: float, least: int, heuristic: list[np.ndarray] | None = None
) -> np.ndarray | None:
    """Per member, the [lowest, highest] load it carries in any assignment with the least sum
    of squares `least` (shape (members, 2); members that take nothing: [0, 0]), from the
    load-count model: whether some balanced assignment has a member of any type of
    interchangeable members below (above) the lowest (highest) load seen so far for its type,
    until none has.
    None when the model is too large or the work would take more than a quarter of the time left."""
    weights = {group.weight for group in index.groups if group.units and group.eligible}
    types = list(_types(index).items())
    if heuristic is None:
        heuristic = solve_sticky(index, TimeBudget(deadline))
    window = _load_window(index, heuristic, dict(types))
    if not weights <= {1, 2} or len(types) * (window[1] - window[0] + 1) > LOAD_COUNTS_LIMIT:
        return None
    stop = time.monotonic() + (deadline - time.monotonic()) / 4
    model, _, counts, squares = _load_count_model(index, stop, window)
    model.add(squares == least)
    seen: dict[int, list[int]] = {}

    def solve(objective: cp_model.LinearExprT) -> int:
        model.clear_objective()
        model.maximize(objective)
        try:
            solver = _solve(model, stop)
        except SolveTimeout:
            raise _RangesTooSlow from None
        for (t, load), count in counts.items():
            if solver.value(count) > 0:
                low, high = seen.get(t, [load, load])
                seen[t] = [min(low, load), max(high, load)]
        return int(round(solver.objective_value))

    try:
        if squares_of(index, heuristic) == least:
            # the KIP-54 answer is balanced: the loads its members carry are seen
            loads = _loads(index, heuristic)
            seen.update({t: [int(loads[ms].min()), int(loads[ms].max())] for t, (_, ms) in enumerate(types)})
        else:
            solve(0)
        if len(seen) < len(types):
            return None
        # while some balanced assignment has a member of any type outside the loads seen for
        # its type, take its loads in and look again: the last solve proves every range at once
        while solve(sum(v for (t, load), v in counts.items() if not seen[t][0] <= load <= seen[t][1])) > 0:
            pass
    except _RangesTooSlow:
        return None
    ranges = np.zeros((index.member_count, 2), dtype=np.int64)
    for t, (_, members) in enumerate(types):
        ranges[members] = seen[t]
    return ranges


class _RangesTooSlow(Exception):
    pass


def _load_window(
    index: ConsumerIndex, owners: list[np.ndarray], types: dict[tuple[int, ...], list[int]]
) -> tuple[int, int]:
    """Loads every balanced assignment keeps to: with M members that may take units, loads
    summing to T and a valid assignment's sum of squares S (the heuristic's), any assignment
    at least as even has sum((load - T/M)^2) <= S - T^2/M, so each load lies within the root
    of that of the mean."""
    loads = _loads(index, owners)
    members = sum(len(ms) for ms in types.values())
    total = int(loads.sum())
    if not members:
        return 0, 0
    spread = int((loads * loads).sum()) - total * total / members
    reach = math.isqrt(max(0, math.ceil(spread))) + 1
    mean = total / members
    return max(0, math.floor(mean) - reach), math.ceil(mean) + reach


def _solve(model: cp_model.CpModel, deadline: float) -> cp_model.CpSolver:
    left = deadline - time.monotonic()
    if left <= 0:
        raise SolveTimeout("CP-SAT had no time left for the balance level")
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = left
    # one worker: the same request always gets the same answer (the contract's determinism)
    solver.parameters.num_workers = 1
    status = solver.solve(model)
    if status in (cp_model.UNKNOWN, cp_model.FEASIBLE):
        raise SolveTimeout("CP-SAT did not prove the balance level within the time limit")
    if status != cp_model.OPTIMAL:
        raise SolverFailure(f"CP-SAT ended with status {solver.status_name(status)} on the balance level")
    return solver


def _types(index: ConsumerIndex) -> dict[tuple[int, ...], list[int]]:
    """Members that may take exactly the same groups (interchangeable at the balance level)."""
    groups_of: dict[int, list[int]] = {}
    for g, group in enumerate(index.groups):
        if group.units:
            for m in group.eligible:
                groups_of.setdefault(m, []).append(g)
    types: dict[tuple[int, ...], list[int]] = {}
    for m, gs in sorted(groups_of.items()):
        types.setdefault(tuple(gs), []).append(m)
    return types


def _load_count_model(
    index: ConsumerIndex, deadline: float, window: tuple[int, int]
) -> tuple[
    cp_model.CpModel,
    dict[tuple[int, int], cp_model.IntVar],
    dict[tuple[int, int], cp_model.IntVar],
    cp_model.LinearExprT,
]:
    """(model, units per (type, group), members per (type, load), the sum of squared loads)."""
    model = cp_model.CpModel()
    types = list(_types(index).items())
    groups = index.groups
    take = {
        (t, g): model.new_int_var(0, groups[g].units, f"take_t{t}_g{g}") for t, (gs, _) in enumerate(types) for g in gs
    }
    for g, group in enumerate(groups):
        keys = [key for key in take if key[1] == g]
        if group.units and keys:
            # every unit of the group goes to one type of eligible members
            model.add(sum(take[key] for key in keys) == group.units)
    counts: dict[tuple[int, int], cp_model.IntVar] = {}
    squares = []
    for t, (gs, members) in enumerate(types):
        if time.monotonic() > deadline:
            raise SolveTimeout("building the balance model used up the time limit")
        top = sum(groups[g].weight * groups[g].units for g in gs)
        size = len(members)
        row = {
            load: model.new_int_var(0, size, f"members_t{t}_load{load}")
            for load in range(window[0], min(top, window[1]) + 1)
        }
        counts.update({(t, load): v for load, v in row.items()})
        # every member carries one load; together they carry what the type takes
        model.add(sum(row.values()) == size)
        model.add(sum(load * v for load, v in row.items()) == sum(groups[g].weight * take[t, g] for g in gs))
        singles = sum(take[t, g] for g in gs if groups[g].weight == 1)
        model.add(sum(v for load, v in row.items() if load % 2) <= singles)
        squares.append(sum(load * load * v for load, v in row.items() if load))
    return model, take, counts, sum(squares)


def _least_squares_by_load_counts(
    index: ConsumerIndex, deadline: float, window: tuple[int, int], bound: int | None = None
) -> tuple[int, dict[tuple[int, int], int]]:
    """Units weigh 1 or 2 partitions. Per type of interchangeable members: how many units of
    each group it takes, and how many of its members carry each load. Loads are realisable
    exactly when no more members carry an odd load than the type takes single partitions
    (each odd load needs one; the rest pair up with the 2-partition units)."""
    model, take, counts, squares = _load_count_model(index, deadline, window)
    types = list(_types(index).items())
    if bound is not None:
        # the split relaxation's optimum: nothing is more even
        model.add(squares >= bound)
    model.minimize(squares)
    solver = _solve(model, deadline)
    per_group: dict[tuple[int, int], int] = {}
    for t, (gs, members) in enumerate(types):
        loads = [load for (tt, load), v in counts.items() if tt == t for _ in range(int(solver.value(v)))]
        loads.sort(reverse=True)
        taken = {g: int(solver.value(take[t, g])) for g in gs}
        per_group.update(_realise(index, members, loads, taken))
    return int(round(solver.objective_value)), per_group


def _realise(
    index: ConsumerIndex, members: list[int], loads: list[int], taken: dict[int, int]
) -> dict[tuple[int, int], int]:
    """Units per (group, member) giving `members` these loads from the type's `taken` units:
    one single partition to each odd load, then 2-partition units while they last, then
    singles."""
    singles = [g for g in taken if index.groups[g].weight == 1 for _ in range(taken[g])]
    doubles = [g for g in taken if index.groups[g].weight == 2 for _ in range(taken[g])]
    out: dict[tuple[int, int], int] = {}

    def give(g: int, m: int) -> None:
        out[g, m] = out.get((g, m), 0) + 1

    need = dict(zip(members, loads, strict=True))
    for m in members:
        if need[m] % 2:
            give(singles.pop(), m)
            need[m] -= 1
    for m in members:
        while need[m] >= 2 and doubles:
            give(doubles.pop(), m)
            need[m] -= 2
    for m in members:
        while need[m]:
            give(singles.pop(), m)
            need[m] -= 1
    return out


def _least_squares_by_member(
    index: ConsumerIndex, deadline: float, window: tuple[int, int], bound: int | None = None
) -> tuple[int, dict[tuple[int, int], int]]:
    """Any unit weights: one integer per (group, eligible member); interchangeable members'
    loads ordered."""
    model = cp_model.CpModel()
    groups = [g for g, group in enumerate(index.groups) if group.units and group.eligible]
    take = {
        (g, m): model.new_int_var(0, index.groups[g].units, f"take_g{g}_m{m}")
        for g in groups
        for m in index.groups[g].eligible
    }
    for g in groups:
        # every unit of the group goes to one eligible member
        model.add(sum(take[g, m] for m in index.groups[g].eligible) == index.groups[g].units)
    taken_by: dict[int, list[int]] = {}
    for g, m in take:
        taken_by.setdefault(m, []).append(g)
    tops = {m: sum(index.groups[g].weight * index.groups[g].units for g in gs) for m, gs in taken_by.items()}
    low, high = window
    unary = sum(max(0, min(top, high) - low) for top in tops.values()) <= UNARY_STEPS_LIMIT
    loads: dict[int, cp_model.IntVar] = {}
    squares: list[cp_model.LinearExprT] = []
    for m, gs in sorted(taken_by.items()):
        if time.monotonic() > deadline:
            raise SolveTimeout("building the balance model used up the time limit")
        base, top = min(low, tops[m]), min(tops[m], high)
        loads[m] = model.new_int_var(base, top, f"load_m{m}")
        # a member's load is the partitions it consumes
        model.add(loads[m] == sum(index.groups[g].weight * take[g, m] for g in gs))
        above = model.new_int_var(0, top - base, f"above_m{m}")
        model.add(above == loads[m] - base)
        # (base + x)^2 = base^2 + 2 base x + x^2
        squares.extend([base * base + 2 * base * above, squared(model, above, top - base, f"above_m{m}", unary)])
    for members in _types(index).values():
        for first, second in zip(members, members[1:], strict=False):
            # their permutations need no proof
            model.add(loads[first] >= loads[second])
    if bound is not None:
        # the split relaxation's optimum: nothing is more even
        model.add(sum(squares) >= bound)
    model.minimize(sum(squares))
    solver = _solve(model, deadline)
    per_group = {key: int(solver.value(v)) for key, v in take.items()}
    return int(round(solver.objective_value)), per_group


def _per_class(
    index: ConsumerIndex, unit_classes: UnitClasses, per_group: dict[tuple[int, int], int]
) -> dict[tuple[int, int], int]:
    """Units per (class, member) with the per-group counts: each member fills up first on the
    classes it keeps partitions of, then on the rest."""
    sizes = unit_classes.size.tolist()
    left = dict(enumerate(sizes))
    classes_of: dict[int, list[int]] = {}
    for c, p in enumerate(unit_classes.class_pool.tolist()):
        classes_of.setdefault(unit_classes.pools[p].group, []).append(c)
    keeps: dict[int, set[int]] = {}
    for c, m in zip(unit_classes.kept_class.tolist(), unit_classes.kept_member.tolist(), strict=True):
        keeps.setdefault(m, set()).add(c)
    out: dict[tuple[int, int], int] = {}
    for (g, m), count in sorted(per_group.items()):
        mine = keeps.get(m, set())
        for c in sorted(classes_of.get(g, []), key=lambda c: (c not in mine, c)):
            if count == 0:
                break
            amount = min(count, left[c])
            if amount:
                out[c, m] = out.get((c, m), 0) + amount
                left[c] -= amount
                count -= amount
    return out
