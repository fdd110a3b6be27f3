"""Proven lower bounds for balance `load`: on the bottleneck L*, and on the moves.

L* (the smallest possible largest normalized load W/c) is at least:

- the heaviest-unit bound: every unit goes somewhere, so L* >= max over units of the least
  w/c it can weigh on any member eligible for it;
- the heaviest-units bound (Horvath, Lam and Sethi's for uniform machines): the k heaviest units
  a set of members alone may take sit on at most k of them, so L* >= their weight over the k
  largest capacities of the set, for every k;
- the fractional bound: with units split at will (each weighing its least for any eligible
  member), L is reachable only when a max-flow source -> unit class -> eligible member -> sink,
  the sink arc of member m holding floor(L * c_m) (W_m is an integer), carries every weight.
  Infeasible at L proves L* > L; bisection between the proven bound and a known assignment's
  bottleneck narrows it. Every W_m is a sum of weights, so a multiple of their greatest common
  divisor g: the sink arc holds g x floor(L * c_m / g) (equal to floor(L * c_m) when g is 1).

The moves (docs/wire-format.md, level 2) are at least the claims nobody can keep, plus, per member,
the fewest of the single partitions it keeps that it must give up so that what it keeps fits
under (1 + load_tolerance) x U x c_m, U any known bottleneck (U >= L*, so the cap is never lower
than the true one).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from ortools.graph.python import max_flow

from stickyd.solvers.budget import TimeBudget
from stickyd.solvers.consumer.load.data import LoadData

BISECTION_STEPS = 60
RELATIVE_GAP = Fraction(1, 10**9)
"""bisection stops once the bound is this close (relative) to the known bottleneck."""


def heaviest_unit_bound(data: LoadData) -> Fraction:
    best = Fraction(0)
    for group in data.groups:
        if not group.weight.shape[1]:
            continue
        capacity = data.capacity[group.eligible]
        if len(group.weight) == 1:
            best = max(best, Fraction(int(group.weight[0].max()), int(capacity.max())))
            continue
        # per unit, the least w/c over eligible members: compare as exact fractions per member
        for u in np.flatnonzero(group.weight.max(axis=0) > 0).tolist():
            least = min(
                Fraction(int(w), int(c)) for w, c in zip(group.weight[:, u].tolist(), capacity.tolist(), strict=True)
            )
            best = max(best, least)
    return best


CLASSES_COMPARED = 64
"""up to this many distinct eligible sets, each also counts the units of the sets inside it."""


def heaviest_units_bound(data: LoadData) -> Fraction:
    """max over eligible sets E and k <= |E| of (k heaviest units only E may take) / (k largest
    capacities in E)."""
    classes: dict[frozenset[int], list[np.ndarray]] = {}
    for group in data.groups:
        if group.weight.shape[1]:
            classes.setdefault(frozenset(group.eligible.tolist()), []).append(group.min_weight())
    best = Fraction(0)
    for members, own in classes.items():
        inside = [w for other, ws in classes.items() if other <= members for w in ws]
        weights = np.concatenate(inside if len(classes) <= CLASSES_COMPARED else own)
        k = min(len(members), len(weights))
        top = np.sort(np.partition(weights, len(weights) - k)[len(weights) - k :])[::-1]
        capacity = np.sort(data.capacity[sorted(members)])[::-1][:k]
        work, room = np.cumsum(top), np.cumsum(capacity)
        if k:
            at = int(np.argmax(work / room))  # any k gives a proven bound: floats only pick one
            best = max(best, Fraction(int(work[at]), int(room[at])))
    return best


def fractional_bound(data: LoadData, known: Fraction, budget: TimeBudget) -> Fraction:
    """A proven lower bound on L*: the heaviest-unit bound raised by bisection on max-flow,
    between it and `known` (the bottleneck of some valid assignment)."""
    classes: dict[tuple[int, ...], int] = {}
    for group in data.groups:
        if group.weight.shape[1]:
            key = tuple(group.eligible.tolist())
            classes[key] = classes.get(key, 0) + int(group.min_weight().sum())
    low = max(heaviest_unit_bound(data), heaviest_units_bound(data))
    high = known
    if not classes:
        return low
    network = _SplitNetwork(data, classes)
    if network.feasible(low):
        return low
    for _ in range(BISECTION_STEPS):
        if high - low <= high * RELATIVE_GAP or budget.expired():
            break
        middle = Fraction((low + high) / 2).limit_denominator(10**12)
        if not low < middle < high:
            break
        if network.feasible(middle):
            high = middle
        else:
            low = middle
    return low


class _SplitNetwork:
    """source -> eligible set (the least weights of its units) -> each of its members -> sink, built
    once: only the members' arcs to the sink change with the bottleneck tried."""

    def __init__(self, data: LoadData, classes: dict[tuple[int, ...], int]) -> None:
        n = data.member_count
        self.capacity = data.capacity.tolist()
        self.step = weight_divisor(data)
        self.source, self.sink = n + len(classes), n + len(classes) + 1
        self.total = sum(classes.values())
        self.flow = max_flow.SimpleMaxFlow()
        sizes = np.array([len(eligible) for eligible in classes], dtype=np.int64)
        weights = np.array(list(classes.values()), dtype=np.int64)
        nodes = n + np.arange(len(classes), dtype=np.int64)
        # every unit class is supplied its weight
        self._arcs(np.full(len(classes), self.source), nodes, weights)
        # a class's weight may go to any member eligible for it
        members = np.fromiter((m for eligible in classes for m in eligible), dtype=np.int64, count=int(sizes.sum()))
        self._arcs(np.repeat(nodes, sizes), members, np.repeat(weights, sizes))
        # a member takes at most what fits under the bottleneck (set per try)
        self.sink_arcs = self._arcs(np.arange(n), np.full(n, self.sink), np.zeros(n, dtype=np.int64))

    def _arcs(self, tails: np.ndarray, heads: np.ndarray, capacities: np.ndarray) -> np.ndarray:
        return np.asarray(self.flow.add_arcs_with_capacity(tails.astype(np.int32), heads.astype(np.int32), capacities))

    def feasible(self, bottleneck: Fraction) -> bool:
        """Whether units split at will fit under `bottleneck` x capacity on every member."""
        step = self.step
        per_capacity = {c: step * math.floor(bottleneck * c / step) for c in set(self.capacity)}
        room = np.array([per_capacity[c] for c in self.capacity], dtype=np.int64)
        self.flow.set_arcs_capacity(self.sink_arcs, room)
        if self.flow.solve(self.source, self.sink) != self.flow.OPTIMAL:
            return False
        return bool(self.flow.optimal_flow() == self.total)


def weight_divisor(data: LoadData) -> int:
    """The greatest common divisor of every unit weight (1 when all are 0): every member's total
    weight W_m is a multiple of it."""
    divisor = 0
    for group in data.groups:
        if group.weight.size:
            divisor = math.gcd(divisor, int(np.gcd.reduce(group.weight, axis=None)))
    return divisor or 1


def moves_lower_bound(data: LoadData, owned: int, known: Fraction) -> int:
    """At least this many partitions move in any assignment within (1 + tolerance) x L*, given
    `known` >= L* (see the module's docstring)."""
    best_kept = sum(int(g.kept.sum()) for g in data.groups)
    forced = owned - best_kept
    limit = (1 + data.tolerance) * known
    claimants, weights = [], []
    for group in data.groups:
        if group.join or not group.weight.shape[1]:
            continue  # joins: another member may keep as much of a unit, so leaving it may cost nothing
        mine = group.claimant >= 0
        claimants.append(group.claimant[mine])
        weights.append(group.weight[0][mine])
    owner, weight = (
        np.concatenate([np.zeros(0, np.int64), *claimants]),
        np.concatenate([np.zeros(0, np.int64), *weights]),
    )
    if not len(owner):
        return forced
    order = np.lexsort((-weight, owner))  # member by member, heaviest first
    owner, weight = owner[order], weight[order]
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    members = owner[starts]
    per_capacity = {c: math.floor(limit * c) for c in set(data.capacity[members].tolist())}
    room = np.array([per_capacity[c] for c in data.capacity[members].tolist()], dtype=np.int64)
    excess = np.add.reduceat(weight, starts) - room
    # a member sheds its heaviest kept partitions while what it shed so far is short of its
    # excess (none when it has no excess: nothing shed is ever short of 0 or less)
    sizes = np.diff(np.r_[starts, len(owner)])
    before = np.cumsum(weight) - weight
    before -= np.repeat(before[starts], sizes)
    shed = int((before < np.repeat(excess, sizes)).sum())
    return forced + shed
