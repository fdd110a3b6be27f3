"""What the optimal solver's flow will cost, estimated from the network's size before it is built.

The flow runs in OR-Tools' C++ and cannot be stopped half way, so the dispatcher asks this
before building it: when the estimate does not fit in what is left of the optimal solver's
share, the request goes straight to the fallback (KIP-54 or the quick fill) in the same process,
instead of finishing the flow past its deadline.

The network (solvers/consumer/flow.py) has one arc per (pool, eligible member) and one per
(class, claimant); a class is at most one unit, and after Kafka's own assignors about one
(topic, member) pair. Both are bounded here from the index without building anything: the
groups' eligible members, and the distinct (member, topic) pairs among the reported claims
(sorted by member, topic), capped by the units.

Calibrated with the Kafka-like layouts of `bench/layouts.py`, unequal subscriptions, networks
from 10k x 1,000 to 1M x 2,000 (every layout, leave / join / partitions added, 100-5,000 members),
the CPU time of classes, flow and answer's counts on a quiet 2-core machine. Since the flow first
tries the even split (solvers/consumer/flow.py) it costs 0.3-0.6 us per arc and about 0.1 us per
unit (2026-11-28: 100k x 5,000, 128k arcs, 59-78 ms; 100k x 100 with partitions added, 2,600
arcs, 12 ms; 1M x 2,000 about 0.25 s), a third of what it cost before (2.0 us per arc). The
constants below keep room for the lexicographic flow that answers when loads cannot be even and
for `max_imbalance`'s second flow (1M x 2,000: 0.57 and 0.68 s against 0.26 s even, an estimate of
0.83 s) and bound every measured network. Re-measured with
`python -m bench.flow_estimate` (bench/RESULTS.md, "Consumer flow estimate").

That is CPU time on a quiet core; the deadline is wall time. The estimate is scaled by how slowly
this process has been running during this very request (wall over CPU time since the dispatcher
started: 2 when another process shares its core), times CACHE_SLOWDOWN for what a busy neighbour
core costs the CPU time itself (1M x 2,000 at load 1.8: 1.7-2.0 s against 1.3 s quiet). So on a
quiet machine a flow that fits starts (a 100k x 1,000 request with `time_limit_ms` 200-225 ms now
gets its proven answer), and on a loaded one the estimate grows with the load instead of being
one fixed rate for all.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from stickyd.models.consumer.index import ConsumerIndex
from stickyd.solvers.time_policy import (
    AFTER_S_FIXED,
    AFTER_S_PER_PARTITION,
    AFTER_S_PER_PARTITION_COMPACT,
    CACHE_SLOWDOWN,
    FLOW_S_FIXED,
    FLOW_S_PER_ARC,
    FLOW_S_PER_UNIT,
    MIN_MEASURED_CPU_S,
    UNMEASURED_SLOWDOWN,
)


@dataclass(frozen=True)
class RunningPace:
    """The wall and CPU clocks where the dispatcher started, to tell how slowly this process
    runs now: another process on its core (or the solver process's nice level) stretches wall
    time per CPU second."""

    wall: float
    cpu: float

    @classmethod
    def start(cls) -> RunningPace:
        return cls(time.monotonic(), time.process_time())

    def slowdown(self) -> float:
        """Wall seconds per CPU second since the start, at least 1 (UNMEASURED_SLOWDOWN when
        too little CPU time has passed to tell)."""
        cpu = time.process_time() - self.cpu
        if cpu < MIN_MEASURED_CPU_S:
            return UNMEASURED_SLOWDOWN
        return max(1.0, (time.monotonic() - self.wall) / cpu)


def network_arcs(index: ConsumerIndex) -> int:
    """An upper bound on the flow's routing arcs: (pool, member) plus (class, claimant)."""
    units = network_units(index)
    free = sum(len(g.eligible) for g in index.groups if g.units)
    return free + min(index.reported.member_topic_pairs(), units)


def network_units(index: ConsumerIndex) -> int:
    """The units the flow places."""
    return sum(g.units for g in index.groups)


def optimal_flow_s(arcs: int, units: int, slowdown: float = 1.0) -> float:
    """Seconds the optimal solver's classes and flow over `arcs` routing arcs and `units` units
    are expected to take, at most, in a process running `slowdown` wall seconds per CPU second."""
    quiet_cpu = FLOW_S_FIXED + FLOW_S_PER_ARC * arcs + FLOW_S_PER_UNIT * units
    return quiet_cpu * CACHE_SLOWDOWN * max(1.0, slowdown)


def answer_after_flow_s(partitions: int, slowdown: float = 1.0, *, compact: bool = False) -> float:
    """Seconds kept after the optimal solver for its answer (the check, the solution, its JSON
    bytes, or its compact ones), at most, in a process running `slowdown` wall seconds per CPU
    second."""
    per_partition = AFTER_S_PER_PARTITION_COMPACT if compact else AFTER_S_PER_PARTITION
    return (AFTER_S_FIXED + per_partition * partitions) * CACHE_SLOWDOWN * max(1.0, slowdown)
