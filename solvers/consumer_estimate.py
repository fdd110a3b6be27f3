"""What the optimal solver's flow will cost, estimated from the network's size before it is built.

The flow runs in OR-Tools' C++ and cannot be stopped half way, so the dispatcher asks this
before building it: when the estimate does not fit in what is left of the optimal solver's
share, the request goes straight to the fallback (KIP-54 or the quick fill) in the same process,
instead of finishing the flow past its deadline.

The network (solvers/consumer_flow.py) has one arc per (pool, eligible member) and one per
(class, claimant); a class is at most one unit, and after Kafka's own assignors about one
(topic, member) pair. Both are bounded here from the index without building anything: the
groups' eligible members, and the distinct (member, topic) pairs among the reported claims
(sorted by member, topic), capped by the units.

Calibrated with `python -m bench.consumer` layouts (README "How the solvers work"): classes,
flow and answer's counts together took 2.5-2.8 us per arc on a quiet 2-core machine and
2.8-3.8 us at load 1.8 (1M x 2,000 unequal: ~512,000 arcs, 1.3 s quiet, 1.7-2.0 s at load
1.8; contiguous blocks: ~261,000 arcs, 0.74 s). The rate below is above every measured one.
"""

from __future__ import annotations

import numpy as np

from models.consumer_index import ConsumerIndex

FLOW_S_FIXED = 0.01
"""whatever the size: building the arrays, OR-Tools' set-up."""
FLOW_S_PER_ARC = 4.2e-6
"""per arc of the network: classes, the flow itself, the counts turned back into units."""


def network_arcs(index: ConsumerIndex) -> int:
    """An upper bound on the flow's routing arcs: (pool, member) plus (class, claimant)."""
    units = sum(g.units for g in index.groups)
    free = sum(len(g.eligible) for g in index.groups if g.units)
    reported = index.reported
    if len(reported.member):
        changes = (np.diff(reported.member) != 0) | (np.diff(reported.topic) != 0)
        pairs = 1 + int(np.count_nonzero(changes))
    else:
        pairs = 0
    return free + min(pairs, units)


def optimal_flow_s(arcs: int) -> float:
    """Seconds the optimal solver's classes and flow over `arcs` routing arcs are expected to take, at most."""
    return FLOW_S_FIXED + FLOW_S_PER_ARC * arcs
