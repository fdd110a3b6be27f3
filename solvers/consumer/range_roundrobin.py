"""Kafka's RangeAssignor and RoundRobinAssignor, applied to units.

For plain topics a unit is a partition and these are Kafka's algorithms. For a KIP-315
co-partitioned group the unit (partition p of every joined topic) is dealt as one, so the
baselines stay valid for joins; Kafka's own would split a join whenever subscriptions differ.
"""

from __future__ import annotations

import numpy as np

from stickyd.models.consumer.index import ConsumerIndex


def solve_range(index: ConsumerIndex) -> list[np.ndarray]:
    """Per topic, consumers sorted by id take contiguous ranges; the first P mod N one more."""
    owners = []
    for group in index.groups:
        owner = np.full(group.units, -1, dtype=np.int64)
        consumers = sorted(group.eligible, key=lambda m: index.members[m])
        if consumers:
            per, extra = divmod(group.units, len(consumers))
            sizes = [per + (1 if i < extra else 0) for i in range(len(consumers))]
            owner[:] = np.repeat(consumers, sizes)
        owners.append(owner)
    return owners


def solve_roundrobin(index: ConsumerIndex) -> list[np.ndarray]:
    """All partitions sorted by (topic, partition), dealt to consumers in a circle sorted by
    id, skipping consumers that do not subscribe to the partition's topic."""
    n = index.member_count
    owners = [np.full(g.units, -1, dtype=np.int64) for g in index.groups]
    cursor = 0
    for g, group in enumerate(index.groups):
        if not group.eligible:
            continue
        eligible = np.zeros(n, dtype=bool)
        eligible[list(group.eligible)] = True
        if eligible.all():
            # every member subscribes: the circle simply continues
            owners[g][:] = (cursor + np.arange(group.units)) % n
            cursor = (cursor + group.units) % n
            continue
        owner = owners[g]
        for p in range(group.units):
            while not eligible[cursor]:
                cursor = (cursor + 1) % n
            owner[p] = cursor
            cursor = (cursor + 1) % n
    return owners
