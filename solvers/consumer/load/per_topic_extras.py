"""Balance `per_topic` where every group is one topic and no racks are given: a min-cost flow on
which members get each topic's extra partition, then the partitions dealt topic by topic.

Per topic t with P partitions and S subscribers, P = floor x S + r: the per-topic level gives every
subscriber floor or floor + 1 of it, so exactly r of them get the extra one (the "ceil"). Nothing
else is free, and the levels below depend on that choice alone (docs/algorithms.md, "Why the
extras' flow is exact"):

    topic t (supplies r) --one extra, cost: -1 when m owned more than floor of t--> member m
    member m --convex: the k-th extra costs the rise of its squared total--> sink

- then the totals: member m's total is its floors plus its extras, so the k-th extra raises its
  squared total by 2 (floors + k) - 1;
- then stickiness: with c partitions of t, m keeps min(c, owned) of its own, which is
  min(floor, owned) plus one more when m gets the extra and owned more than floor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from stickyd.models.consumer.index import ConsumerIndex, UnitGroup
from stickyd.solvers.flows.levels import solve_by_levels
from stickyd.solvers.flows.network import FlowNetwork


def fits_extras(index: ConsumerIndex) -> bool:
    """Whether the extras' flow answers the request: every group one topic, no racks."""
    return not index.has_racks and all(len(g.topics) == 1 for g in index.groups)


@dataclass(frozen=True)
class _Topic:
    """One topic's part in the flow."""

    eligible: np.ndarray
    """its subscribers' member ids, in eligible order."""
    floor: int
    claimant: np.ndarray
    """per partition: the eligible position of its claimant (-1: none, or not a subscriber)."""
    owned: np.ndarray
    """per eligible position: partitions of the topic it claims."""
    extras: slice | None
    """arcs topic -> member, in eligible order, when the topic has a remainder."""


def solve_per_topic_extras(index: ConsumerIndex, between: Callable[[], None]) -> list[np.ndarray]:
    """Owners per group (fits_extras(index) must hold): every level of per_topic proven."""
    members = index.member_count
    net = FlowNetwork()
    member_node = net.add_nodes(members)
    sink = net.add_nodes(1)
    floors = np.zeros(members, dtype=np.int64)
    most = np.zeros(members, dtype=np.int64)
    keep_costs: list[np.ndarray] = []
    topics: list[_Topic | None] = []
    for group in index.groups:
        topic = _topic_of(group, members)
        topics.append(topic)
        if topic is None:
            continue
        floors[topic.eligible] += topic.floor
        remainder = group.units - topic.floor * len(topic.eligible)
        if remainder:
            node = net.add_nodes(1)
            net.supply(node, remainder)
            # one extra partition of the topic to each of r of its subscribers
            extras = net.add_arcs(node, member_node + topic.eligible, 1, 0)
            # then stickiness: the extra keeps one more of a member's own partitions if it owned more than floor
            keep_costs.append(-(topic.owned > topic.floor).astype(np.int64))
            most[topic.eligible] += 1
            topics[-1] = replace(topic, extras=extras)
            net.supply(sink, -remainder)
        between()
    square_costs = [np.zeros(net.arcs, dtype=np.int64)]
    keep_costs.append(np.zeros(int(most.sum()), dtype=np.int64))
    # then the totals: the k-th extra of a member raises its squared total by 2 (floors + k) - 1
    tails = np.repeat(member_node + np.arange(members), most)
    k = np.arange(int(most.sum()), dtype=np.int64) - np.repeat(np.cumsum(most) - most, most) + 1
    square_costs.append(2 * (np.repeat(floors, most) + k) - 1)
    net.add_arcs(tails, sink, 1, 0)
    flow = solve_by_levels(net, [np.concatenate(square_costs), np.concatenate(keep_costs)], between)
    return [_deal(group.units, topic, flow) for group, topic in zip(index.groups, topics, strict=True)]


def _topic_of(group: UnitGroup, members: int) -> _Topic | None:
    if not group.units or not group.eligible:
        return None
    eligible = np.asarray(group.eligible, dtype=np.int64)
    row = np.full(members + 1, -1, dtype=np.int64)
    row[eligible] = np.arange(len(eligible))
    claimant = row[group.claims[0]]
    owned = np.bincount(claimant[claimant >= 0], minlength=len(eligible))
    return _Topic(eligible, group.units // len(eligible), claimant, owned, None)


def _deal(units: int, topic: _Topic | None, flow: np.ndarray) -> np.ndarray:
    """A topic's partitions from its members' counts: each claimant keeps its lowest-numbered
    partitions up to its count, the others go, ascending, to the members in eligible order, as many
    as each still takes."""
    owner = np.full(units, -1, dtype=np.int64)
    if topic is None:
        return owner
    count = np.full(len(topic.eligible), topic.floor, dtype=np.int64)
    if topic.extras is not None:
        count += flow[topic.extras]
    claimed = np.flatnonzero(topic.claimant >= 0)
    ordered = claimed[np.argsort(topic.claimant[claimed], kind="stable")]
    holder = topic.claimant[ordered]
    rank = np.arange(len(ordered)) - np.repeat(np.cumsum(topic.owned) - topic.owned, topic.owned)
    stays = rank < count[holder]
    owner[ordered[stays]] = topic.eligible[holder[stays]]
    kept = np.minimum(count, topic.owned)
    owner[owner < 0] = np.repeat(topic.eligible, count - kept)
    return owner
