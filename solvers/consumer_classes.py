"""Aggregate units into classes so that optimisation models grow with topics and members.

Units of one group are interchangeable except for who claims them and which racks hold them.
A *pool* is a group's units with one rack signature; a *class* is a pool's units with one claim
signature (who owned them, and how many partitions of the unit each owner keeps). Models pick
how many units of a class go to each member; `materialize` turns counts back into units.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.consumer_index import ConsumerIndex


@dataclass(frozen=True)
class Pool:
    group: int
    eligible: tuple[int, ...]
    rack_miss: dict[int, int]
    """member -> partitions of one unit it would consume off-rack (KIP-881); zeros omitted."""


@dataclass(frozen=True)
class UnitClass:
    pool: int
    units: np.ndarray
    """unit numbers (partition numbers), ascending."""
    kept: dict[int, int]
    """eligible claimant -> partitions of one unit it keeps if it gets the unit."""
    claimed: int
    """partitions of one unit with a valid claim."""


@dataclass(frozen=True)
class UnitClasses:
    pools: list[Pool]
    classes: list[UnitClass]


def build_classes(index: ConsumerIndex) -> UnitClasses:
    pools: list[Pool] = []
    classes: list[UnitClass] = []
    for g, group in enumerate(index.groups):
        if group.units == 0 or not group.eligible:
            continue
        rack_ids, rack_sigs = _rack_signatures(group.racks, group.units)
        claim_ids, claim_sigs = _claim_signatures(group.claims)
        first_pool = len(pools)
        for sig in rack_sigs:
            pools.append(Pool(g, group.eligible, _rack_miss(index, group.topics, group.eligible, sig)))
        key = rack_ids * (len(claim_sigs) + 1) + (claim_ids + 1)
        keys, inverse = np.unique(key, return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        bounds = np.cumsum(np.bincount(inverse, minlength=len(keys)))[:-1]
        eligible = set(group.eligible)
        for k, units in zip(keys.tolist(), np.split(order, bounds), strict=True):
            rack_id, claim_id = divmod(k, len(claim_sigs) + 1)
            owners = claim_sigs[claim_id - 1] if claim_id else {}
            classes.append(
                UnitClass(
                    pool=first_pool + rack_id,
                    units=units,
                    kept={m: c for m, c in owners.items() if m in eligible},
                    claimed=sum(owners.values()),
                )
            )
    return UnitClasses(pools, classes)


def _claim_signatures(claims: np.ndarray) -> tuple[np.ndarray, list[dict[int, int]]]:
    """Per unit, an id of its claim signature (-1: nobody claims it), and the signatures."""
    if claims.shape[0] == 1:
        members, inverse = np.unique(claims[0], return_inverse=True)
        sigs = [{int(m): 1} for m in members]
        ids = inverse.astype(np.int64)
        if len(members) and members[0] < 0:
            ids -= 1
            sigs = sigs[1:]
        return ids, sigs
    table: dict[tuple[int, ...], int] = {}
    ids = np.empty(claims.shape[1], dtype=np.int64)
    for p, column in enumerate(claims.T.tolist()):
        sig = tuple(sorted(m for m in column if m >= 0))
        ids[p] = -1 if not sig else table.setdefault(sig, len(table))
    sigs: list[dict[int, int]] = []
    for sig in table:
        counts: dict[int, int] = {}
        for m in sig:
            counts[m] = counts.get(m, 0) + 1
        sigs.append(counts)
    return ids, sigs


RackSignature = tuple[frozenset[str] | None, ...]


def _rack_signatures(
    racks: tuple[tuple[frozenset[str] | None, ...], ...] | None, units: int
) -> tuple[np.ndarray, list[RackSignature]]:
    if racks is None:
        return np.zeros(units, dtype=np.int64), [()]
    table: dict[RackSignature, int] = {}
    ids = np.fromiter(
        (table.setdefault(sig, len(table)) for sig in zip(*racks, strict=True)),
        dtype=np.int64,
        count=units,
    )
    return ids, list(table)


def _rack_miss(
    index: ConsumerIndex, topics: tuple[str, ...], eligible: tuple[int, ...], sig: RackSignature
) -> dict[int, int]:
    if not sig:
        return {}
    miss: dict[int, int] = {}
    for m in eligible:
        rack = index.racks[m]
        if rack is None:
            continue
        subs = index.subscriptions[m]
        count = sum(
            1 for t, r in zip(topics, sig, strict=True) if t in subs and r is not None and rack not in r
        )
        if count:
            miss[m] = count
    return miss


def materialize(
    index: ConsumerIndex,
    unit_classes: UnitClasses,
    direct: list[dict[int, int]],
    from_pool: list[dict[int, int]],
) -> list[np.ndarray]:
    """Owners per group from counts: `direct[c][m]` units of class c to m, then each pool's
    leftover units (ascending) dealt out by `from_pool[pool][m]` in member order."""
    owners = [np.full(g.units, -1, dtype=np.int64) for g in index.groups]
    leftovers: list[list[np.ndarray]] = [[] for _ in unit_classes.pools]
    for cls, counts in zip(unit_classes.classes, direct, strict=True):
        group = unit_classes.pools[cls.pool].group
        start = 0
        for m in sorted(counts):
            take = counts[m]
            owners[group][cls.units[start : start + take]] = m
            start += take
        leftovers[cls.pool].append(cls.units[start:])
    for p, (pool, counts) in enumerate(zip(unit_classes.pools, from_pool, strict=True)):
        free = np.sort(np.concatenate(leftovers[p] or [np.zeros(0, np.int64)]))
        start = 0
        for m in sorted(counts):
            owners[pool.group][free[start : start + counts[m]]] = m
            start += counts[m]
        if start != len(free):
            raise RuntimeError(f"{len(free) - start} units of a pool were left unplaced")
    return owners

