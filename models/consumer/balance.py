"""Index what balance `per_topic` and `load` need once: capacities, unit weights, warnings.

Members are numbered as in `ConsumerIndex` (by id); a unit (a partition, or KIP-315 partition
number p of a co-partitioned group) weighs, for the member that gets it, the weights of the
partitions of it that the member reads. docs/wire-format.md, "What balanced means", defines it.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from stickyd.models.consumer.index import ConsumerIndex, UnitGroup
from stickyd.models.consumer.problem import ConsumerProblem
from stickyd.models.consumer.weights import LIVE
from stickyd.models.errors import ProblemError

NO_CLUSTER = (
    '"live" needs the partitions\' measured rates, and this service watches no Kafka cluster: '
    "send the weights (one integer per topic, or one per partition)"
)


@dataclass(frozen=True)
class BalanceIndex:
    capacity: np.ndarray
    """int64 per member (index order): what it can take relative to the others."""
    weights: dict[str, np.ndarray]
    """subscribed topic -> int64 weight per partition."""
    tolerance: Fraction
    """options.load_tolerance read as the decimal it was written as (0.05 is 1/20)."""
    warnings: tuple[str, ...]

    def unit_weights(self, index: ConsumerIndex, g: int) -> np.ndarray:
        """shape (len(eligible), units): what each unit of group g weighs for each eligible member."""
        group = index.groups[g]
        rows = []
        for m in group.eligible:
            reads = [self.weights[t][: group.units] for t in group.subscribed_topics(index.subscriptions[m])]
            rows.append(np.sum(reads, axis=0, dtype=np.int64) if reads else np.zeros(group.units, np.int64))
        return np.array(rows, dtype=np.int64).reshape(len(group.eligible), group.units)


def index_balance(problem: ConsumerProblem, index: ConsumerIndex) -> BalanceIndex:
    """Capacities and weights of `problem` for `index`; ProblemError for weights it cannot have."""
    options = problem.options
    weighed = options.balance == "load" or options.strategy == "lag-greedy"
    given = problem.partition_weights
    if given == LIVE:
        raise ProblemError("partition_weights", NO_CLUSTER)
    by_id = {m.id: m.capacity or 1 for m in problem.members}
    capacity = np.array([by_id[m] for m in index.members], dtype=np.int64)
    warnings: list[str] = []
    if not weighed:
        if any(m.capacity is not None for m in problem.members):
            warnings.append("members' capacity is ignored: it counts only with options.balance load")
        if given:
            warnings.append("partition_weights is ignored: it counts only with options.balance load")
    elif options.max_imbalance:
        warnings.append("options.max_imbalance is ignored with balance load: load_tolerance plays its part")
    entries = given if isinstance(given, dict) else {}
    listed = [
        np.asarray(w, dtype=np.int64) if isinstance(w, list) else np.full(problem.topics[t], w, np.int64)
        for t, w in entries.items()
    ]
    partitions = sum(len(w) for w in listed)
    mean = int(sum(int(w.sum()) for w in listed) // partitions) if partitions else 1
    weights: dict[str, np.ndarray] = {}
    missing: list[str] = []
    for topic, count in index.topics.items():
        if topic in entries:
            weight = entries[topic]
            weights[topic] = (
                np.asarray(weight, dtype=np.int64) if isinstance(weight, list) else np.full(count, weight, np.int64)
            )
        else:
            weights[topic] = np.full(count, mean, np.int64)
            missing.append(topic)
    if weighed and missing:
        warnings.append(
            f"subscribed topics without partition_weights weigh {mean} per partition "
            f"(the mean of the given weights, 1 when none is given): {', '.join(missing)}"
        )
    return BalanceIndex(capacity, weights, Fraction(repr(options.load_tolerance)), tuple(warnings))


def member_weights(index: ConsumerIndex, balance: BalanceIndex, owners: list[np.ndarray]) -> np.ndarray:
    """W per member (int64): the weights of the partitions its units give it."""
    total = np.zeros(index.member_count, dtype=np.int64)
    for g, (group, owner) in enumerate(zip(index.groups, owners, strict=True)):
        if not group.units:
            continue
        if len(group.topics) == 1:
            np.add.at(total, owner, balance.weights[group.topics[0]][: group.units])
            continue
        table = balance.unit_weights(index, g)
        row = {m: i for i, m in enumerate(group.eligible)}
        rows = np.fromiter((row[m] for m in owner.tolist()), np.int64, len(owner))
        np.add.at(total, owner, table[rows, np.arange(group.units)])
    return total


def per_topic_bounds(group: UnitGroup) -> tuple[int, int]:
    """(floor, ceil) of the units each eligible member of `group` gets under balance per_topic."""
    if not group.eligible:
        return 0, 0
    low, extra = divmod(group.units, len(group.eligible))
    return low, low + (1 if extra else 0)
