"""A real Apache Kafka broker with `stickyd.unequal.subscriptions=broker` (and
`stickyd.equal.subscriptions=broker`, for the group's first member alone) and no stickyd to ask (its
`stickyd.url` resets every connection): a group of unequal subscriptions whose even split meets the
moves' bound is assigned by stickyd's rule in the broker (`broker-solve-total` rises over JMX, no
request, no fallback): balanced, and each member keeping what an even split lets it keep."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient

from tests.kafka.apache_kafka import ApacheKafka
from tests.kafka.consumer_protocol import Member, settle
from tests.kafka.plugin.test_equal_in_broker_kafka import broker_without_stickyd, counters, create_topics


@pytest.fixture(scope="module")
def broker() -> Iterator[ApacheKafka]:
    both = {"stickyd.equal.subscriptions": "broker", "stickyd.unequal.subscriptions": "broker"}
    yield from broker_without_stickyd(both)


def test_a_group_of_unequal_subscriptions_is_solved_in_the_broker_with_stickyd_unreachable(broker: ApacheKafka) -> None:
    partitions = create_topics(broker, {"even-a": 4, "even-b": 2})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    before = counters(broker)
    # v0 reads both topics, v1 only even-a: 3 each, v1's all of even-a
    members = [
        Member(broker.bootstrap, "even", "v0", ["even-a", "even-b"]),
        Member(broker.bootstrap, "even", "v1", ["even-a"]),
    ]
    try:
        first, overlaps = settle(
            members, partitions, admin, "even", lambda now: sorted(map(len, now.values())) == [3, 3]
        )
        members.append(Member(broker.bootstrap, "even", "v2", ["even-a", "even-b"]))
        after, more = settle(members, partitions, admin, "even", lambda now: sorted(map(len, now.values())) == [2] * 3)
        solved = counters(broker)
    finally:
        for member in members:
            member.leave()
    assert not overlaps and not more
    assert all(topic == "even-a" for topic, _ in first["v1"])
    # the fewest moves of an even split: each of the two first members gives up one of its three
    assert all(len(after[name] & first[name]) == 2 for name in ("v0", "v1"))
    assert solved["broker-solve"] > before["broker-solve"]
    assert solved["request"] == before["request"] and solved["fallback"] == before["fallback"]
