"""A flow's bound for mixed-weight groups: co-partitioned units split into their partitions.

A unit of a join (KIP-315) gives its member partition p of every topic of the group. Letting
the partitions of a unit go to different members (each still to a member eligible for the unit)
relaxes the problem, and with every unit a single partition the relaxation is a min-cost flow:
balance (sum of squared loads), then moves, then rack misses, all proven by the flow. Every
real assignment is an assignment of the relaxation with the same loads, moves and rack misses,
so the relaxation's optimum bounds the real one level by level:

- where the flow keeps every unit's partitions on one member, its answer is a real assignment
  that meets the bound: optimal at every level, no CP-SAT needed;
- otherwise its figures are lower bounds that let CP-SAT stop as soon as it reaches them, and
  the KIP-54 answer, when its loads are as even as the bound, is the balance level's optimum.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from stickyd.models.consumer.index import ConsumerIndex, UnitGroup
from stickyd.solvers.consumer.classes import build_classes
from stickyd.solvers.consumer.flow import ConsumerFlowModel, Weights, solve_min_cost_flow


@dataclass(frozen=True)
class SplitBound:
    squares: int
    """the least sum of squared loads of the relaxation (a lower bound on the real one)."""
    moves: int
    """its fewest moves at that balance (a lower bound wherever the real balance meets `squares`)."""
    owners: list[np.ndarray] | None
    """per group of the real index, its units' owners, when the relaxation's answer keeps
    every unit whole (then it is the real optimum)."""


def split_index(index: ConsumerIndex) -> tuple[ConsumerIndex, list[int]] | None:
    """The relaxation's index and, per split group, the real group it came from; None when some
    member of a group reads only part of its topics (its units weigh differently per member)."""
    groups: list[UnitGroup] = []
    origin: list[int] = []
    for g, group in enumerate(index.groups):
        if group.weight != len(group.topics) and group.units and group.eligible:
            return None
        for i, topic in enumerate(group.topics):
            racks = (group.racks[i],) if group.racks is not None else None
            groups.append(
                UnitGroup(
                    topics=(topic,),
                    units=group.units,
                    eligible=group.eligible,
                    weight=1,
                    claims=group.claims[i : i + 1],
                    racks=racks,
                )
            )
            origin.append(g)
    return dataclasses.replace(index, groups=tuple(groups)), origin


def split_bound(index: ConsumerIndex, deadline: float) -> SplitBound | None:
    """The relaxation solved by the flow (raises SolveTimeout past `deadline`); None where it
    does not apply."""
    split = split_index(index)
    if split is None:
        return None
    relaxed, origin = split
    weights = {m: 1 for group in relaxed.groups for m in group.eligible}
    answer = solve_min_cost_flow(relaxed, build_classes(relaxed), weights, max_imbalance=0, deadline=deadline)
    loads = answer.loads.astype(np.int64)
    squares = int((loads * loads).sum())
    return SplitBound(squares, _moves(relaxed, answer.owners), _whole(index, origin, answer.owners))


@dataclass(frozen=True)
class MovesWithin:
    moves: int
    """the relaxation's fewest moves with every load within its range (a lower bound)."""
    owners: list[np.ndarray] | None
    """its answer per real group when it keeps every unit whole (a real assignment)."""


def moves_within(index: ConsumerIndex, ranges: np.ndarray, deadline: float) -> MovesWithin | None:
    """The fewest moves of the relaxation with every member's load within its `ranges` row
    (the loads members carry in balanced assignments): a lower bound on the moves of every
    balanced real assignment. None where the relaxation does not apply."""
    split = split_index(index)
    if split is None:
        return None
    relaxed, origin = split
    weights = {m: 1 for group in relaxed.groups for m in group.eligible}
    model = ConsumerFlowModel(relaxed, build_classes(relaxed), weights)
    lo = np.minimum(ranges[:, 0], model.capacity)
    hi = np.minimum(ranges[:, 1], model.capacity)
    answer = model.solve(lo, hi, Weights(balance=0, moves=1, racks=0), deadline)
    return MovesWithin(_moves(relaxed, answer.owners), _whole(index, origin, answer.owners))


def _whole(index: ConsumerIndex, origin: list[int], owners: list[np.ndarray]) -> list[np.ndarray] | None:
    """Owners per real group when every unit's partitions went to one member, else None."""
    whole: list[np.ndarray | None] = [None] * len(index.groups)
    for g, owner in zip(origin, owners, strict=True):
        first = whole[g]
        if first is None:
            whole[g] = owner
        elif not np.array_equal(first, owner):
            return None
    return [o if o is not None else np.zeros(0, np.int64) for o in whole]


def _moves(relaxed: ConsumerIndex, owners: list[np.ndarray]) -> int:
    return sum(
        int(((group.claims[0] >= 0) & (group.claims[0] != owner)).sum())
        for group, owner in zip(relaxed.groups, owners, strict=True)
    )
