"""A real Apache Kafka broker with `stickyd.equal.subscriptions=broker` and no stickyd to ask (its
`stickyd.url` resets every connection): a group whose members subscribe to the same topics is
still assigned by stickyd's rule, solved in the broker (`broker-solve-total` rises over JMX, no
request, no fallback), keeping what each member can keep; a group of unequal subscriptions is asked
of stickyd and, with nobody answering, falls back to Kafka's uniform assignor."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from stickyd.cli.child_service import free_port
from tests.kafka.apache_kafka import ApacheKafka, apache_kafka_broker, stickyd_broker_properties
from tests.kafka.consumer_protocol import TP, Member, settle
from tests.kafka.jvm import kafka_jars_built
from tests.kafka.plugin.jmx import consumer_bean, read_mbeans
from tests.kafka.switchboard import Switchboard

CONSUMER = consumer_bean()


def broker_without_stickyd(properties: dict[str, str]) -> Iterator[ApacheKafka]:
    """A broker with the plug-in and `properties`, whose `stickyd.url` resets every connection."""
    if not kafka_jars_built():
        pytest.skip("Kafka jars not built: run `mvn -q -B -f plugins/kafka/pom.xml package` (scripts/test does)")
    gone = Switchboard()  # starts in `reset`: stickyd unreachable
    try:
        with apache_kafka_broker(
            {**stickyd_broker_properties(gone.url), **properties}, jmx_port=free_port()
        ) as running:
            yield running
    finally:
        gone.close()


@pytest.fixture(scope="module")
def broker() -> Iterator[ApacheKafka]:
    yield from broker_without_stickyd({"stickyd.equal.subscriptions": "broker"})


def counters(broker: ApacheKafka) -> dict[str, float]:
    bean = read_mbeans(broker.jmx)[CONSUMER]
    return {name: bean.get(f"{name}-total") or 0.0 for name in ("request", "fallback", "broker-solve")}


def create_topics(broker: ApacheKafka, topics: dict[str, int]) -> set[TP]:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    created = admin.create_topics([NewTopic(t, num_partitions=n, replication_factor=1) for t, n in topics.items()])
    for future in created.values():
        future.result(timeout=30)
    return {(t, p) for t, n in topics.items() for p in range(n)}


def test_a_group_of_equal_subscriptions_is_solved_in_the_broker_with_stickyd_unreachable(broker: ApacheKafka) -> None:
    partitions = create_topics(broker, {"eq-a": 4, "eq-b": 2})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    before = counters(broker)
    members = [Member(broker.bootstrap, "eq", f"e{i}", ["eq-a", "eq-b"]) for i in range(2)]
    try:
        first, overlaps = settle(members, partitions, admin, "eq", lambda now: sorted(map(len, now.values())) == [3, 3])
        members.append(Member(broker.bootstrap, "eq", "e2", ["eq-a", "eq-b"]))
        after, more = settle(members, partitions, admin, "eq", lambda now: sorted(map(len, now.values())) == [2, 2, 2])
        solved = counters(broker)
    finally:
        for member in members:
            member.leave()
    assert not overlaps and not more
    # stickyd's rule: each of the two first members keeps two of its three partitions
    assert all(len(after[name] & first[name]) == 2 for name in ("e0", "e1"))
    assert solved["broker-solve"] > before["broker-solve"]
    assert solved["request"] == before["request"] and solved["fallback"] == before["fallback"]


def test_a_group_of_unequal_subscriptions_still_asks_stickyd(broker: ApacheKafka) -> None:
    partitions = create_topics(broker, {"uneq-a": 2, "uneq-b": 2})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    before = counters(broker)
    members = [
        Member(broker.bootstrap, "uneq", "u0", ["uneq-a"]),
        Member(broker.bootstrap, "uneq", "u1", ["uneq-a", "uneq-b"]),
    ]
    try:
        settle(members, partitions, admin, "uneq", lambda now: all(now.values()))
        asked = counters(broker)
    finally:
        for member in members:
            member.leave()
    # asked (unreachable), answered by Kafka's uniform assignor (while u0 was alone, the group's
    # subscriptions were equal: that assignment may have been solved in the broker)
    assert asked["request"] > before["request"]
    assert asked["fallback"] - before["fallback"] == asked["request"] - before["request"]
