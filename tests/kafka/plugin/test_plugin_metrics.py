"""What an operator sees of the KIP-848 plug-in in a real Apache Kafka broker, over JMX: a broker
with JMX remote on loopback and two stickyd replicas in `stickyd.url` (each behind a switchboard
relay, so that the test can take them away). While stickyd answers, the plug-in's request counter
rises and the outage gauge is 0; with both replicas gone the gauge is 1 and the fallbacks counted
under `cause=unreachable` rise; the first answer after that brings the gauge back to 0. A replica
stopped while groups rebalance costs no fallback: the plug-in asks the other one."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import httpx
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from stickyd.cli.child_service import ServiceProcess, free_port, running_service
from tests.kafka.apache_kafka import ApacheKafka, apache_kafka_broker, stickyd_broker_properties
from tests.kafka.consumer_protocol import TP, Member, settle
from tests.kafka.jvm import kafka_jars_built
from tests.kafka.plugin.jmx import consumer_bean, read_mbeans
from tests.kafka.switchboard import Switchboard
from tests.service_metrics import requests_to

CONSUMER = consumer_bean()


@pytest.fixture(scope="module")
def replicas() -> Iterator[tuple[Switchboard, Switchboard]]:
    """The two addresses in the broker's `stickyd.url`, in that order; both start in `reset`."""
    first, second = Switchboard(), Switchboard()
    try:
        yield first, second
    finally:
        first.close()
        second.close()


@pytest.fixture(scope="module")
def broker(replicas: tuple[Switchboard, Switchboard]) -> Iterator[ApacheKafka]:
    if not kafka_jars_built():
        pytest.skip("Kafka jars not built: run `mvn -q -B -f plugins/kafka/pom.xml package` (scripts/test does)")
    urls = ",".join(board.url for board in replicas)
    with apache_kafka_broker(stickyd_broker_properties(urls), jmx_port=free_port()) as running:
        yield running


@pytest.fixture(scope="module")
def admin(broker: ApacheKafka) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def create_topic(admin: AdminClient, topic: str, partitions: int) -> set[TP]:
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(timeout=30)
    return {(topic, p) for p in range(partitions)}


def warm(service: ServiceProcess) -> None:
    warm = {"topics": {"t": 2}, "members": [{"id": "a", "topics": ["t"]}]}
    httpx.post(f"{service.url}/v1/assign/consumer", json=warm, timeout=30).raise_for_status()


def counters(broker: ApacheKafka) -> dict[str, float]:
    beans = read_mbeans(broker.jmx)
    return {
        "requests": beans[CONSUMER]["request-total"] or 0.0,
        "fallbacks": beans[CONSUMER]["fallback-total"] or 0.0,
        "failovers": beans[CONSUMER]["failover-total"] or 0.0,
        "outage": beans[CONSUMER]["outage"] or 0.0,
        "unreachable": beans[consumer_bean(cause="unreachable")]["fallback-total"] or 0.0,
    }


def loads(expected: list[int]) -> Callable[[dict[str, frozenset[TP]]], bool]:
    return lambda now: sorted(len(owned) for owned in now.values()) == expected


def test_the_outage_gauge_and_the_fallbacks_by_cause_are_read_over_jmx(
    broker: ApacheKafka, admin: AdminClient, replicas: tuple[Switchboard, Switchboard], service: ServiceProcess
) -> None:
    """Requests rise while stickyd answers (gauge 0); with every replica reset the gauge is 1 and the
    fallbacks under cause=unreachable rise (the group still settles, by Kafka's uniform assignor);
    once stickyd answers again the gauge is 0."""
    partitions = create_topic(admin, "jmx-outage", 6)
    warm(service)
    for board in replicas:
        board.forward(service.url)
    before = counters(broker)
    members = [Member(broker.bootstrap, "jmx-outage", "o0", ["jmx-outage"])]
    try:
        settle(members, partitions, admin, "jmx-outage", loads([6]))
        answering = counters(broker)
        for board in replicas:
            board.reset()
        members.append(Member(broker.bootstrap, "jmx-outage", "o1", ["jmx-outage"]))
        settle(members, partitions, admin, "jmx-outage", loads([3, 3]))
        down = counters(broker)
        for board in replicas:
            board.forward(service.url)
        members.pop().leave()
        settle(members, partitions, admin, "jmx-outage", loads([6]))
        back = counters(broker)
    finally:
        for member in members:
            member.leave()
    assert answering["requests"] > before["requests"]
    assert answering["outage"] == 0 and answering["fallbacks"] == before["fallbacks"]
    assert down["outage"] == 1
    assert down["unreachable"] > answering["unreachable"]
    assert down["fallbacks"] - answering["fallbacks"] == down["unreachable"] - answering["unreachable"]
    assert back["outage"] == 0
    assert back["requests"] > down["requests"]


def test_a_replica_stopped_while_groups_rebalance_costs_no_fallback(
    broker: ApacheKafka, admin: AdminClient, replicas: tuple[Switchboard, Switchboard], service: ServiceProcess
) -> None:
    """Two real `stickyd serve` replicas: the first one in `stickyd.url` answers while a group forms;
    it is stopped as members join; every later assignment comes from the second replica (its request
    counter rises, the plug-in counts failovers) and none from Kafka's fallback."""
    first, second = replicas
    partitions = create_topic(admin, "jmx-replicas", 12)
    warm(service)
    second.forward(service.url)
    log_start = len(broker.log_text())
    members: list[Member] = []
    with running_service({"STICKYD_WORKERS": "1"}) as doomed:
        warm(doomed)
        first.forward(doomed.url)
        before = counters(broker)
        members += [Member(broker.bootstrap, "jmx-replicas", f"r{i}", ["jmx-replicas"]) for i in range(2)]
        try:
            settle(members, partitions, admin, "jmx-replicas", loads([6, 6]))
            assert requests_to(doomed, "/v1/assign/consumer") > 0, "the first replica did not answer"
            members.append(Member(broker.bootstrap, "jmx-replicas", "r2", ["jmx-replicas"]))
            second_before = requests_to(service, "/v1/assign/consumer")
        except BaseException:
            for member in members:
                member.leave()
            raise
    try:  # the first replica is stopped (its switchboard now resets every connection)
        settle(members, partitions, admin, "jmx-replicas", loads([4, 4, 4]))
        members.append(Member(broker.bootstrap, "jmx-replicas", "r3", ["jmx-replicas"]))
        settle(members, partitions, admin, "jmx-replicas", loads([3, 3, 3, 3]))
        after = counters(broker)
    finally:
        for member in members:
            member.leave()
        first.reset()
        second.reset()
    assert after["fallbacks"] == before["fallbacks"], "a fallback was taken"
    assert after["failovers"] > before["failovers"]
    assert after["requests"] > before["requests"]
    assert requests_to(service, "/v1/assign/consumer") > second_before
    assert after["outage"] == 0
    assert not [line for line in broker.log_text()[log_start:].splitlines() if re.search(r"WARN stickyd at", line)]
