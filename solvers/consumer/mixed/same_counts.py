"""The fewest moves among assignments that give every member as many units of each weight as a
given one (the same loads, so the same balance): one min-cost flow per unit weight.

Units of different weights never compete for the same member slot once each member's count per
weight is fixed, so the problem splits by weight into transportation problems, each a flow
whose members take exactly their count. A balanced answer (the KIP-54 heuristic's) comes back
with its loads and at most its moves; when that meets the relaxations' floor it is optimal, and
otherwise it is a better start for CP-SAT.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from stickyd.models.consumer.index import ConsumerIndex
from stickyd.solvers.consumer.classes import build_classes
from stickyd.solvers.consumer.flow import ConsumerFlowModel, Weights


def fewest_moves_same_counts(index: ConsumerIndex, owners: list[np.ndarray], deadline: float) -> list[np.ndarray]:
    """Owners per group: each member keeps its number of units of every weight in `owners`."""
    out = [owner.copy() for owner in owners]
    for weight in sorted({g.weight for g in index.groups if g.units and g.eligible}):
        picked = [
            g for g, group in enumerate(index.groups) if group.units and group.eligible and group.weight == weight
        ]
        sub = dataclasses.replace(index, groups=tuple(index.groups[g] for g in picked))
        counts = np.zeros(index.member_count, dtype=np.int64)
        for g in picked:
            counts += np.bincount(owners[g][owners[g] >= 0], minlength=index.member_count)
        model = ConsumerFlowModel(sub, build_classes(sub), dict.fromkeys(range(index.member_count), 1))
        racks = model.rack_range()
        # exactly the member's count of units of this weight: no balance term; moves, then racks
        answer = model.solve(counts, counts, Weights(balance=0, moves=racks + 1, racks=1), deadline)
        for g, owner in zip(picked, answer.owners, strict=True):
            out[g] = owner
    return out
