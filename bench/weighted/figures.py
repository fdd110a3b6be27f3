"""What an answer weighs: the members' normalized loads W/c of any assignor's answer, summed here
from the request's weights and capacities (Kafka's UniformAssignor ignores both, so its weighted
bottleneck can only be computed outside it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Group:
    """The request's partitions in flat order (topics as listed, partitions in order)."""

    offsets: dict[str, int]
    weights: np.ndarray
    """int64 per flat partition."""
    capacity: np.ndarray
    """int64 per member, in the request's order."""
    members: list[str]


def group_of(problem: dict[str, Any]) -> Group:
    offsets, start = {}, 0
    for topic, count in problem["topics"].items():
        offsets[topic] = start
        start += int(count)
    weights = np.ones(start, dtype=np.int64)
    for topic, given in (problem.get("partition_weights") or {}).items():
        at, count = offsets[topic], int(problem["topics"][topic])
        weights[at : at + count] = given if isinstance(given, int) else np.asarray(given, dtype=np.int64)
    members = [m["id"] for m in problem["members"]]
    capacity = np.array([int(m.get("capacity") or 1) for m in problem["members"]], dtype=np.int64)
    return Group(offsets, weights, capacity, members)


def owners_of(group: Group, assignment: dict[str, dict[str, list[int]]]) -> np.ndarray:
    """Per flat partition, the index of the member an answer's partition maps give it to (-1: nobody)."""
    owner = np.full(len(group.weights), -1, dtype=np.int64)
    position = {m: i for i, m in enumerate(group.members)}
    for member, parts in assignment.items():
        for topic, partitions in parts.items():
            owner[group.offsets[topic] + np.asarray(partitions, dtype=np.int64)] = position[member]
    return owner


def normalized_loads(group: Group, owner: np.ndarray) -> np.ndarray:
    """W/c per member of an answer given as flat owners; partitions owned by -1 count for nobody."""
    placed = owner >= 0
    total = np.bincount(owner[placed], weights=group.weights[placed], minlength=len(group.members))
    return np.asarray(total / group.capacity, dtype=np.float64)
