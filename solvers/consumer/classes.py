"""Aggregate units into classes so that optimisation models grow with topics and members.

Units of one group are interchangeable except for who claims them and which racks hold them.
A *pool* is a group's units with one rack signature; a *class* is a pool's units with one claim
signature (who owned them, and how many partitions of the unit each owner keeps). Models pick
how many units of a class go to each member; `materialize` turns counts back into units.

Units are numbered globally (group offset + partition number) and classes are kept as arrays,
so a million partitions cost numpy passes, not Python loops.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stickyd.models.consumer.index import ConsumerIndex, UnitGroup
from stickyd.solvers.sorting import stable_order


@dataclass(frozen=True)
class Pool:
    group: int
    eligible: tuple[int, ...]
    rack_miss: dict[int, int]
    """member -> partitions of one unit it would consume off-rack (KIP-881); zeros omitted."""


@dataclass(frozen=True)
class UnitClasses:
    pools: list[Pool]
    group_offset: np.ndarray
    """global unit id of partition 0 of each group (one more entry: the total)."""
    class_pool: np.ndarray
    class_claimed: np.ndarray
    """partitions of one unit with a valid claim."""
    class_start: np.ndarray
    """class c's units are units[class_start[c]:class_start[c + 1]], ascending."""
    units: np.ndarray
    kept_class: np.ndarray
    kept_member: np.ndarray
    kept_count: np.ndarray
    """(class, eligible claimant, partitions of one unit it keeps if it gets the unit)."""

    @property
    def count(self) -> int:
        return len(self.class_pool)

    @property
    def size(self) -> np.ndarray:
        return np.diff(self.class_start)

    def rack_miss(self, member_count: int) -> np.ndarray:
        """pools x members: off-rack partitions per unit."""
        miss = np.zeros((len(self.pools), member_count), dtype=np.int64)
        for p, pool in enumerate(self.pools):
            for m, count in pool.rack_miss.items():
                miss[p, m] = count
        return miss


def build_classes(index: ConsumerIndex) -> UnitClasses:
    pools: list[Pool] = []
    class_pool, class_size, class_claimed, units = [], [], [], []
    kept_class, kept_member, kept_count = [], [], []
    offsets = np.concatenate([[0], np.cumsum([g.units for g in index.groups])]).astype(np.int64)
    n_classes = 0
    plain = [g for g, group in enumerate(index.groups) if _is_plain(group)]
    if plain:
        # one vectorised pass over every plain topic (no join, no racks): the common case
        pools += [Pool(g, index.groups[g].eligible, {}) for g in plain]
        parts = _plain_classes(index, plain, offsets)
        class_pool.append(parts[0])
        class_size.append(parts[1])
        class_claimed.append(parts[2])
        units.append(parts[3])
        kept_class.append(parts[4])
        kept_member.append(parts[5])
        kept_count.append(np.ones(len(parts[4]), dtype=np.int64))
        n_classes = len(parts[0])
    for g, group in enumerate(index.groups):
        if group.units == 0 or not group.eligible or _is_plain(group):
            continue
        rack_ids, rack_sigs = _rack_signatures(group.racks, group.units)
        claim_ids, sig_claimed, rows = _claim_signatures(group.claims, group.eligible, index.member_count)
        first_pool = len(pools)
        for sig in rack_sigs:
            pools.append(Pool(g, group.eligible, _rack_miss(index, group.topics, group.eligible, sig)))
        n_sigs = len(sig_claimed) + 1
        uniq, inverse = np.unique(rack_ids * n_sigs + (claim_ids + 1), return_inverse=True)
        rack_id, claim_id = np.divmod(uniq, n_sigs)
        units.append(np.argsort(inverse, kind="stable") + offsets[g])
        class_size.append(np.bincount(inverse, minlength=len(uniq)))
        class_pool.append(first_pool + rack_id)
        class_claimed.append(np.concatenate([[0], sig_claimed])[claim_id])
        # a class inherits its claim signature's (claimant, kept) rows
        row_sig, row_member, row_count = rows
        per_sig = np.bincount(row_sig, minlength=n_sigs - 1)
        sig_start = np.concatenate([[0], np.cumsum(per_sig)])
        claimed_classes = np.flatnonzero(claim_id > 0)
        class_sig = claim_id[claimed_classes] - 1
        width = per_sig[class_sig]
        picks = np.repeat(sig_start[class_sig], width) + ranges(width)
        kept_class.append(np.repeat(claimed_classes + n_classes, width))
        kept_member.append(row_member[picks])
        kept_count.append(row_count[picks])
        n_classes += len(uniq)

    def joined(parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)

    return UnitClasses(
        pools=pools,
        group_offset=offsets,
        class_pool=joined(class_pool),
        class_claimed=joined(class_claimed),
        class_start=np.concatenate([[0], np.cumsum(joined(class_size))]).astype(np.int64),
        units=joined(units),
        kept_class=joined(kept_class),
        kept_member=joined(kept_member),
        kept_count=joined(kept_count),
    )


def _is_plain(group: UnitGroup) -> bool:
    return len(group.topics) == 1 and group.racks is None and group.units > 0 and bool(group.eligible)


def _plain_classes(index: ConsumerIndex, plain: list[int], offsets: np.ndarray) -> tuple[np.ndarray, ...]:
    """Classes of plain topics: (pool, size, claimed, units, kept class, kept member)."""
    n = index.member_count
    groups = [index.groups[g] for g in plain]
    sizes = np.array([g.units for g in groups], dtype=np.int64)
    pool = np.repeat(np.arange(len(plain), dtype=np.int64), sizes)
    claimant = np.concatenate([g.claims[0] for g in groups])
    # one stable sort by (pool, claimant) gives both the classes and their units, ascending
    key = pool * (n + 1) + (claimant + 1)
    order = stable_order(key)
    sorted_key = key[order]
    starts = np.flatnonzero(np.concatenate([[True], sorted_key[1:] != sorted_key[:-1]]))
    uniq = sorted_key[starts]
    class_pool, class_claimant = np.divmod(uniq, n + 1)
    class_claimant -= 1
    eligible = np.zeros((len(plain), n + 1), dtype=bool)
    for k, g in enumerate(plain):
        eligible[k, index.eligible_ids[g]] = True
    kept = np.flatnonzero((class_claimant >= 0) & eligible[class_pool, class_claimant])
    return (
        class_pool,
        np.diff(np.append(starts, len(key))),
        (class_claimant >= 0).astype(np.int64),
        _plain_units(plain, groups, offsets, order),
        kept,
        class_claimant[kept],
    )


def _plain_units(plain: list[int], groups: list[UnitGroup], offsets: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Global unit ids of the plain topics' partitions (topic by topic) in `order`."""
    if len(plain) == len(offsets) - 1:  # every topic is plain: the ids are the positions
        return order
    unit = np.concatenate([np.arange(g.units, dtype=np.int64) + offsets[i] for i, g in zip(plain, groups, strict=True)])
    return unit[order]


def _claim_signatures(
    claims: np.ndarray, eligible: tuple[int, ...], n: int
) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per unit, the id of its claim signature (-1: nobody claims it); per signature its
    claimed partitions; and rows (signature, eligible claimant, partitions it keeps), sorted."""
    can_keep = np.zeros(n + 1, dtype=bool)
    can_keep[list(eligible)] = True
    if claims.shape[0] == 1:
        members, inverse = np.unique(claims[0], return_inverse=True)
        ids = inverse.astype(np.int64)
        if len(members) and members[0] < 0:
            ids -= 1
            members = members[1:]
        keep = np.flatnonzero(can_keep[members])
        rows = (keep, members[keep], np.ones(len(keep), dtype=np.int64))
        return ids, np.ones(len(members), dtype=np.int64), rows
    table: dict[tuple[int, ...], int] = {}
    ids = np.empty(claims.shape[1], dtype=np.int64)
    for p, column in enumerate(claims.T.tolist()):
        sig = tuple(sorted(m for m in column if m >= 0))
        ids[p] = -1 if not sig else table.setdefault(sig, len(table))
    row_sig, row_member, row_count = [], [], []
    for s, sig in enumerate(table):
        members, counts = np.unique(np.array(sig), return_counts=True)
        for m, c in zip(members.tolist(), counts.tolist(), strict=True):
            if can_keep[m]:
                row_sig.append(s)
                row_member.append(m)
                row_count.append(c)
    rows = (
        np.array(row_sig, dtype=np.int64),
        np.array(row_member, dtype=np.int64),
        np.array(row_count, dtype=np.int64),
    )
    return ids, np.array([len(sig) for sig in table], dtype=np.int64), rows


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
        count = sum(1 for t, r in zip(topics, sig, strict=True) if t in subs and r is not None and rack not in r)
        if count:
            miss[m] = count
    return miss


def materialize(
    classes: UnitClasses,
    direct: tuple[np.ndarray, np.ndarray, np.ndarray],
    from_pool: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> list[np.ndarray]:
    """Owners per group from counts. `direct` rows (class, member, count) take a class's
    lowest units first; each pool's leftover units (ascending) are then dealt out by the
    `from_pool` rows (pool, member, count), members in id order."""
    owner = np.full(int(classes.group_offset[-1]), -1, dtype=np.int64)
    used = np.zeros(len(classes.units), dtype=bool)
    c, m, f = _sorted_rows(*direct)
    if len(c):
        before = _exclusive_cumsum_by(c, f)
        positions = np.repeat(classes.class_start[c] + before, f) + ranges(f)
        owner[classes.units[positions]] = np.repeat(m, f)
        used[positions] = True
    free = np.flatnonzero(~used)
    free_pool = np.repeat(classes.class_pool, classes.size)[free]
    free_units = classes.units[free]
    free_units = free_units[stable_order(free_pool * int(classes.group_offset[-1]) + free_units)]
    pool_start = np.concatenate([[0], np.cumsum(np.bincount(free_pool, minlength=len(classes.pools)))])
    p, m, f = _sorted_rows(*from_pool)
    if len(p):
        before = _exclusive_cumsum_by(p, f)
        positions = np.repeat(pool_start[p] + before, f) + ranges(f)
        owner[free_units[positions]] = np.repeat(m, f)
    if np.count_nonzero(owner >= 0) != len(classes.units):
        raise RuntimeError("some units were left unplaced")
    return [owner[a:b] for a, b in zip(classes.group_offset[:-1], classes.group_offset[1:], strict=True)]


def _sorted_rows(a: np.ndarray, m: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, ...]:
    keep = f > 0
    a, m, f = a[keep].astype(np.int64), m[keep].astype(np.int64), f[keep].astype(np.int64)
    # the flow's rows come in (a, m) order already: sorted only when they do not
    if ((a[1:] > a[:-1]) | ((a[1:] == a[:-1]) & (m[1:] >= m[:-1]))).all():
        return a, m, f
    order = stable_order(a * (int(m.max()) + 1) + m)
    return a[order], m[order], f[order]


def _exclusive_cumsum_by(key: np.ndarray, values: np.ndarray) -> np.ndarray:
    """For rows sorted by key: the sum of values of earlier rows with the same key."""
    total = np.cumsum(values) - values
    first = np.concatenate([[True], key[1:] != key[:-1]])
    return total - np.maximum.accumulate(np.where(first, total, 0))


def ranges(width: np.ndarray) -> np.ndarray:
    """[0..w0-1, 0..w1-1, ...] for the widths given."""
    total = int(width.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(np.cumsum(width) - width, width)
    return np.arange(total, dtype=np.int64) - starts
