"""The load solvers' view of a group: per topic group, its eligible members, what each unit weighs
and who would keep it, made once from the index (members numbered as in `ConsumerIndex`)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from stickyd.models.consumer.balance import BalanceIndex
from stickyd.models.consumer.index import ConsumerIndex


@dataclass(frozen=True)
class GroupLoad:
    eligible: np.ndarray
    """int64 member ids that may take a unit of the group."""
    weight: np.ndarray
    """shape (1 or len(eligible), units): a unit's weight, the same for every member or per member."""
    claimant: np.ndarray
    """per unit: the eligible member keeping most of its partitions, or -1 (nobody can keep it)."""
    kept: np.ndarray
    """per unit: partitions kept when it goes to `claimant`."""
    join: bool = False
    """the units are KIP-315 joins (several topics' partitions each)."""

    def weight_for(self, row: int) -> np.ndarray:
        """units' weights for eligible member number `row` (position in `eligible`)."""
        return self.weight[row if len(self.weight) > 1 else 0]

    def min_weight(self) -> np.ndarray:
        """per unit: the least it weighs for any eligible member."""
        return self.weight.min(axis=0) if self.weight.size else np.zeros(self.weight.shape[1], np.int64)


@dataclass(frozen=True)
class LoadData:
    groups: tuple[GroupLoad, ...]
    capacity: np.ndarray
    tolerance: Fraction

    @property
    def member_count(self) -> int:
        return len(self.capacity)

    def unit_weights_of(self, g: int, owner: np.ndarray) -> np.ndarray:
        """per unit of group g: its weight for the member `owner` gives it to."""
        group = self.groups[g]
        if len(group.weight) == 1:
            return group.weight[0]
        row = np.zeros(self.member_count + 1, dtype=np.int64)
        row[group.eligible] = np.arange(len(group.eligible))
        return group.weight[row[owner], np.arange(len(owner))]  # owner -1 reads row 0: callers mask it

    def member_weights(self, owners: list[np.ndarray]) -> np.ndarray:
        """W per member; units owned by -1 (not placed yet) count for nobody."""
        total = np.zeros(self.member_count, dtype=np.int64)
        for g, owner in enumerate(owners):
            placed = owner >= 0
            if placed.any():
                np.add.at(total, owner[placed], self.unit_weights_of(g, owner)[placed])
        return total


def load_data(index: ConsumerIndex, balance: BalanceIndex) -> LoadData:
    groups = []
    for g, group in enumerate(index.groups):
        eligible = index.eligible_ids[g]
        if len(group.topics) == 1:
            weight = balance.weights[group.topics[0]][None, : group.units]
            claims = group.claims[0]
            allowed = np.zeros(index.member_count + 1, dtype=bool)
            allowed[eligible] = True
            claimant = np.where(allowed[claims], claims, -1)
            kept = (claimant >= 0).astype(np.int64)
        else:
            weight = balance.unit_weights(index, g)
            if (weight == weight[:1]).all():
                weight = weight[:1]
            claimant, kept = _best_claimants(group.claims, eligible)
        groups.append(GroupLoad(eligible, weight, claimant, kept, join=len(group.topics) > 1))
    return LoadData(tuple(groups), balance.capacity, balance.tolerance)


def _best_claimants(claims: np.ndarray, eligible: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """KIP-315 units: the eligible member claiming most of a unit's partitions (lowest id on a tie)."""
    units = claims.shape[1]
    claimant = np.full(units, -1, dtype=np.int64)
    kept = np.zeros(units, dtype=np.int64)
    for m in eligible.tolist():
        mine = (claims == m).sum(axis=0)
        better = mine > kept
        claimant[better] = m
        kept[better] = mine[better]
    return claimant, kept


def kept_by(claims: np.ndarray, member: int) -> np.ndarray:
    """per unit: partitions `member` keeps when it gets the unit."""
    return (claims == member).sum(axis=0)


def off_rack(index: ConsumerIndex, g: int, m: int) -> list[int]:
    """per unit of group g: its partitions member m would read from a rack holding no replica."""
    group = index.groups[g]
    rack = index.racks[m]
    if group.racks is None or rack is None:
        return [0] * group.units
    reads = [i for i, t in enumerate(group.topics) if t in index.subscriptions[m]]
    racks = group.racks

    def missed(i: int, u: int) -> int:
        held = racks[i][u]
        return 1 if held and rack not in held else 0

    return [sum(missed(i, u) for i in reads) for u in range(group.units)]
