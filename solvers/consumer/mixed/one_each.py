"""Mixed-weight groups with a member free for every unit: one unit each, proven by a flow.

A member taking units of weights w1, w2, ... carries (w1 + w2 + ...)^2 >= w1^2 + w2^2 + ...
squared partitions, with equality exactly when it takes at most one unit. So no assignment's sum
of squared loads is below the sum of its units' weights squared, and when some assignment gives
every member at most one unit (a flow with member capacity one decides), the balanced
assignments are exactly those. Among them, the same flow with move and rack costs finds the
fewest moves, then the fewest rack misses: optimal at every level, whatever the weights. This is
the usual shape of a stream join's consumer group (more instances than partitions)."""

from __future__ import annotations

import numpy as np

from stickyd.models.consumer.index import ConsumerIndex
from stickyd.solvers.consumer.classes import UnitClasses
from stickyd.solvers.consumer.flow import ConsumerFlowModel, FlowInfeasible, Weights


def one_unit_each(index: ConsumerIndex, unit_classes: UnitClasses, deadline: float) -> list[np.ndarray] | None:
    """Owners per group, optimal at every level (balance, moves, racks), when every member can
    be given at most one unit; None when some member must take two."""
    readers = {m: 1 for group in index.groups if group.units for m in group.eligible}
    model = ConsumerFlowModel(index, unit_classes, readers)
    hi = np.minimum(model.capacity, 1)
    if model.total_units > int(hi.sum()):
        return None
    racks = model.rack_range()
    try:
        # every load is 0 or one unit's weight: the balance is settled, moves then racks remain
        answer = model.solve(np.zeros_like(hi), hi, Weights(balance=0, moves=racks + 1, racks=1), deadline)
    except FlowInfeasible:
        return None
    return answer.owners
