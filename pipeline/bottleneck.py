"""A consumer group's bottleneck before a plan: the largest normalized load (weight / capacity,
docs/wire-format.md, "What balanced means") of what its members own now. Free of Spark."""

from __future__ import annotations

import numpy as np

from stickyd.models import ConsumerProblem
from stickyd.models.consumer.balance import index_balance
from stickyd.models.consumer.index import index_consumer_problem


def bottleneck_before(problem: ConsumerProblem) -> float:
    """The largest normalized load (weight / capacity) of what the members own now (claims as
    resolved for the solve), under the weights the solve balances."""
    index = index_consumer_problem(problem)
    balance = index_balance(problem, index)
    total = np.zeros(index.member_count, dtype=np.int64)
    for group in index.groups:
        for i, topic in enumerate(group.topics):
            claims = group.claims[i]
            owned = claims >= 0
            np.add.at(total, claims[owned], balance.weights[topic][: group.units][owned])
    if not index.member_count:
        return 0.0
    return float((total / balance.capacity).max())
