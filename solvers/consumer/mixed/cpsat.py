"""CP-SAT for what a flow cannot express: members whose units weigh differently.

A member that reads both topics of a join (2 partitions per unit) and a plain topic (1 per
unit) has a load that is a weighted sum, so its squared load is not a flow cost. The model
still works on classes of interchangeable units, with integer counts, and is solved
lexicographically: balance (on a smaller model of its own, `consumer_balance`), then moves,
then racks, each level proven before the next, each hinted with the level above's answer.
"""

from __future__ import annotations

import math

import numpy as np

from stickyd.models.consumer.index import ConsumerIndex
from stickyd.solvers.budget import TimeBudget
from stickyd.solvers.consumer.classes import UnitClasses, materialize
from stickyd.solvers.consumer.kip54_sticky import solve_sticky
from stickyd.solvers.consumer.mixed.balance import least_squares, load_ranges, squares_of
from stickyd.solvers.consumer.mixed.cpsat_model import ConsumerCpModel
from stickyd.solvers.consumer.mixed.same_counts import fewest_moves_same_counts
from stickyd.solvers.consumer.mixed.split_bound import SplitBound, moves_within


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
        balanced = model.start_from(least, reaching)
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
        balanced = model.start_from(least, reaching)
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
