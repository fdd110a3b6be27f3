"""A valid assignment in a few vectorised passes, for when even the KIP-54 heuristic would be late.

1. every unit keeps its resolved claimant when that member may take it, up to a cap of
   ceil(partitions / members) partitions per member (the rest of its claims are released);
2. the free units go, class by class (units whose eligible members are the same set), to the
   eligible members with the fewest partitions, filling them level by level (water-filling).

Valid by construction: a unit only ever goes to one of its group's eligible members, and every
unit with an eligible member gets one. Balanced within a unit's weight for each class taken
alone; not as balanced or as sticky as KIP-54 across classes. Linear in the units after one sort.
"""

from __future__ import annotations

import numpy as np

from stickyd.models.consumer.index import ConsumerIndex, eligible_masks


def solve_quick(index: ConsumerIndex) -> list[np.ndarray]:
    n = index.member_count
    groups = index.groups
    owners = [_eligible_claimant(index, g, mask) for g, mask in enumerate(eligible_masks(index))]
    weights = [g.weight for g in groups]
    load = _cap_claims(owners, weights, n, sum(g.units * g.weight for g in groups))
    # classes: units whose eligible members are the same set, fewest eligible members first
    classes: dict[tuple[tuple[int, ...], int], list[int]] = {}
    for g, group in enumerate(groups):
        if group.units and group.eligible:
            classes.setdefault((group.eligible, group.weight), []).append(g)
    for (eligible, weight), members in sorted(classes.items(), key=lambda c: len(c[0][0])):
        free = [np.flatnonzero(owners[g] < 0) for g in members]
        total = sum(len(f) for f in free)
        if not total:
            continue
        takers = np.asarray(eligible, dtype=np.int64)
        given = _water_fill(load[takers], total, weight)
        dealt = np.repeat(takers, given)
        load[takers] += given * weight
        start = 0
        for g, units in zip(members, free, strict=True):
            owners[g][units] = dealt[start : start + len(units)]
            start += len(units)
    return owners


def _eligible_claimant(index: ConsumerIndex, g: int, eligible: np.ndarray) -> np.ndarray:
    """Per unit: the first claimant (over the group's topics) that `eligible` lets take it, else -1."""
    group = index.groups[g]
    claims = np.where(eligible[group.claims], group.claims, -1)
    owner = claims[0].copy() if len(claims) else np.full(group.units, -1, dtype=np.int64)
    for row in claims[1:]:
        owner = np.where(owner >= 0, owner, row)
    return owner.astype(np.int64)


def _cap_claims(owners: list[np.ndarray], weights: list[int], n: int, total: int) -> np.ndarray:
    """Release kept claims beyond ceil(total / n) partitions per member; returns the loads."""
    cap = -(-total // max(1, n))
    kept = [np.flatnonzero(o >= 0) for o in owners]
    member = np.concatenate([o[k] for o, k in zip(owners, kept, strict=True)]) if owners else np.zeros(0, np.int64)
    if not len(member):
        return np.zeros(n, dtype=np.int64)
    weight = np.concatenate([np.full(len(k), w, dtype=np.int64) for k, w in zip(kept, weights, strict=True)])
    load = np.bincount(member, weights=weight, minlength=n).astype(np.int64)
    if int(load.max()) <= cap:
        return load
    # only the claims of members over the cap are ranked, in (group, unit) order per member
    mine = np.flatnonzero(load[member] > cap)
    order = mine[np.argsort(member[mine].astype(small_int(n)), kind="stable")]
    sorted_member = member[order]
    # where each member's claims start in `order` (members in ascending order)
    per_member = np.bincount(sorted_member, minlength=n)
    starts = (np.cumsum(per_member) - per_member)[sorted_member]
    over = np.zeros(len(member), dtype=bool)
    if all(w == 1 for w in weights):  # plain topics: a member's k-th claim brings its load to k
        over[order] = np.arange(len(order)) - starts >= cap
    else:
        running = np.cumsum(weight[order])
        before = np.concatenate([[0], running])[starts]
        over[order] = running - before > cap
    start = 0
    for o, k in zip(owners, kept, strict=True):
        o[k[over[start : start + len(k)]]] = -1
        start += len(k)
    return np.bincount(member[~over], weights=weight[~over], minlength=n).astype(np.int64)


def small_int(n: int) -> type[np.signedinteger]:
    """The narrowest integer type for numbers below n: numpy's stable sort of 16-bit integers
    is a radix sort (linear), of wider ones a merge sort."""
    return np.int16 if n <= 2**15 else np.int32 if n <= 2**31 else np.int64


def _water_fill(loads: np.ndarray, units: int, weight: int) -> np.ndarray:
    """How many units each member gets so that the lowest loads rise first."""
    order = np.argsort(loads, kind="stable")
    level = loads[order] // weight
    # units needed to lift the first i+1 members to level[i]
    need = (np.arange(1, len(level) + 1) * level) - np.cumsum(level)
    reach = int(np.searchsorted(need, units, side="right"))
    top = level[reach - 1] + (units - need[reach - 1]) // reach
    given_sorted = np.zeros(len(level), dtype=np.int64)
    given_sorted[:reach] = np.maximum(0, top - level[:reach])
    rest = units - int(given_sorted.sum())
    given_sorted[:rest] += 1
    given = np.zeros(len(level), dtype=np.int64)
    given[order] = given_sorted
    return given
