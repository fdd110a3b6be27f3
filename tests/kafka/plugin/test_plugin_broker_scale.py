"""A 200,000-partition KIP-848 consumer group in a real Apache Kafka 4.4 broker: its group coordinator
asks stickyd's plug-in (`group.remote.assignor=stickyd`, the compact wire, `stickyd.timeout.ms` the
test broker's 500 ms) and the assignment is stickyd's: five confluent-kafka members (each in its own
process) subscribing to 200 topics x 1,000 partitions get a target assignment, as the coordinator
describes it, owning every partition once with 40,000 each. stickyd's own request counter rises, the
plug-in's JMX counters show no fallback, and the broker's log has no fallback line: every exchange
with stickyd kept to the deadline (docs/kafka-plugins.md: it bounds the exchange; building the
request and reading the answer come on top, and in a fresh broker the first calls run before the
JIT has compiled them: the longest `assign()` measured 110-141 ms on a quiet machine, 565 ms once
on a loaded one, with no fallback).

How a single test broker holds 200,000 partitions: it does not host them. A broker keeps every
partition it hosts open (a file descriptor for its segment, two memory maps for its indexes); this
machine allows 20,000 open files per process (a hard limit a test cannot raise) and 65,530 maps, so
one broker holds about 19,000 partitions (18,000 took 41 s to create). The topics' replicas are
placed by hand on a stand-in broker (`tests.kafka.apache_kafka.stand_in_broker`): a second broker id
registered with the real controller and heartbeating, hosting no log. The partitions exist in the
cluster's metadata, which is all a group coordinator assigns from; creating them takes about 12 s.
Its listener is a black hole (members' fetches wait; their group heartbeats go to the real broker).

librdkafka members owning 40,000 partitions each stop heartbeating some seconds after they reconcile
(the coordinator then fences them at the session timeout, here 30 s), so the test reads the
coordinator's target assignment and does not go on to a member leaving."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from stickyd.cli.child_service import ServiceProcess, free_port
from tests.kafka.apache_kafka import (
    ApacheKafka,
    apache_kafka_broker,
    stand_in_broker,
    stickyd_broker_properties,
)
from tests.kafka.consumer_process import MemberProcess
from tests.kafka.consumer_protocol import TP
from tests.kafka.jvm import kafka_jars_built
from tests.kafka.plugin.jmx import consumer_bean, read_mbeans
from tests.kafka.switchboard import Switchboard
from tests.service_metrics import requests_to

TOPICS = 200
PARTITIONS_PER_TOPIC = 1_000
TOPICS_PER_REQUEST = 9
"""A KRaft controller refuses an operation of more than 10,000 records (one per topic and partition)."""
MEMBERS = 5
GROUP = "scale-200k"
STAND_IN = 2
TOPIC_NAMES = [f"scale-{i:03d}" for i in range(TOPICS)]
ALL_PARTITIONS = frozenset((topic, p) for topic in TOPIC_NAMES for p in range(PARTITIONS_PER_TOPIC))
LEAN_MEMBER = {"statistics.interval.ms": 0, "topic.metadata.refresh.interval.ms": 60_000}
"""Members of a 200,000-partition group: no per-partition statistics, metadata refreshed every minute."""

Targets = dict[str, frozenset[TP]]


@pytest.fixture(scope="module")
def broker(service: ServiceProcess) -> Iterator[ApacheKafka]:
    """A broker with the plug-in asking the session's stickyd directly, JMX on loopback, and the
    200,000 partitions created on a stand-in broker (its listener relayed to the real broker while
    the topics are created, as an admin client may send CreateTopics to any broker, then black-holed)."""
    if not kafka_jars_built():
        pytest.skip("Kafka jars not built: run `mvn -q -B -f plugins/kafka/pom.xml package` (scripts/test does)")
    properties = {
        **stickyd_broker_properties(service.url),
        # the metadata log holds ~15 MB of topic records: no snapshot while the test runs
        "metadata.log.max.record.bytes.between.snapshots": str(1 << 30),
        # a member's assignment records (current and target) list its partitions: one member owning
        # all 200,000 writes a batch over the default 1 MB to __consumer_offsets, which then fails
        "message.max.bytes": str(16 << 20),
        # the members, busy with 40,000 partitions each, heartbeat late (see above)
        "group.consumer.session.timeout.ms": "30000",
    }
    listener = Switchboard()
    try:
        with apache_kafka_broker(properties, heap="-Xmx2g", jmx_port=free_port()) as running:
            # the group coordinator's topic first, so that it is placed on the real broker
            wait_coordinator(AdminClient({"bootstrap.servers": running.bootstrap}))
            with stand_in_broker(running, STAND_IN, listener.port):
                listener.forward(f"http://{running.bootstrap}")
                started = time.monotonic()
                create_topics(AdminClient({"bootstrap.servers": running.bootstrap}))
                print(f"\n200,000 partitions created in {time.monotonic() - started:.1f} s")
                listener.black_hole()
                yield running
    finally:
        listener.close()


def create_topics(admin: AdminClient) -> None:
    for start in range(0, TOPICS, TOPICS_PER_REQUEST):
        batch = [
            NewTopic(name, PARTITIONS_PER_TOPIC, replica_assignment=[[STAND_IN]] * PARTITIONS_PER_TOPIC)
            for name in TOPIC_NAMES[start : start + TOPICS_PER_REQUEST]
        ]
        for future in admin.create_topics(batch, request_timeout=60, operation_timeout=60).values():
            future.result(timeout=90)


def wait_coordinator(admin: AdminClient, timeout_s: float = 60.0) -> None:
    """Waits until the group's coordinator answers (its topic, __consumer_offsets, created and loaded)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            targets(admin)
            return
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def targets(admin: AdminClient) -> Targets:
    """Each member's (by client id) target assignment, as the group coordinator describes it."""
    description = admin.describe_consumer_groups([GROUP], request_timeout=30)[GROUP].result(timeout=60)
    return {
        member.client_id: frozenset((tp.topic, tp.partition) for tp in member.target_assignment.topic_partitions)
        for member in description.members
        if member.target_assignment is not None
    }


def wait_assigned(admin: AdminClient, names: set[str], timeout_s: float = 60.0) -> Targets:
    """Waits until the coordinator's target assignment is over exactly `names` (by client id), owns
    every partition once, and is balanced within one; a group that never gets there fails."""
    deadline = time.monotonic() + timeout_s
    wrong: str | None = "not described"
    while time.monotonic() < deadline:
        now = targets(admin)
        wrong = what_is_wrong(now, names)
        if wrong is None:
            return now
        time.sleep(0.5)
    raise AssertionError(f"the group was not assigned within {timeout_s} s: {wrong}")


def what_is_wrong(assigned: Targets, names: set[str]) -> str | None:
    if set(assigned) != names:
        return f"targets for {sorted(assigned)}"
    loads = sorted(len(owned) for owned in assigned.values())
    if sum(loads) != len(ALL_PARTITIONS) or frozenset().union(*assigned.values()) != ALL_PARTITIONS:
        return f"not every partition owned once: {loads}"
    if loads[-1] - loads[0] > 1:
        return f"unbalanced: {loads}"
    return None


def plugin_counters(broker: ApacheKafka) -> dict[str, float]:
    bean = read_mbeans(broker.jmx)[consumer_bean()]
    return {key: bean[key] or 0.0 for key in ("request-total", "fallback-total", "request-latency-max")}


def test_a_200k_partition_group_is_assigned_by_stickyd_in_a_real_broker_within_the_deadline(
    broker: ApacheKafka, service: ServiceProcess
) -> None:
    """Five members join and the coordinator's target gives each 40,000 partitions: the whole 200,000,
    once, balanced, by stickyd (its counter rises; no fallback over JMX or in the broker's log, so
    every exchange kept to stickyd.timeout.ms)."""
    httpx.post(
        f"{service.url}/v1/assign/consumer",
        json={"topics": {"t": 2}, "members": [{"id": "a", "topics": ["t"]}]},
        timeout=30,
    ).raise_for_status()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    asked = requests_to(service, "/v1/assign/consumer")
    names = [f"m{i}" for i in range(MEMBERS)]
    members = [MemberProcess(broker.bootstrap, GROUP, name, TOPIC_NAMES, config=LEAN_MEMBER) for name in names]
    try:
        started = time.monotonic()
        wait_assigned(admin, set(names))
        print(f"{MEMBERS} members assigned in {time.monotonic() - started:.1f} s")
        counters = plugin_counters(broker)
    finally:
        for member in members:
            member.kill()
    print(f"plug-in: {counters}; stickyd requests {asked} -> {requests_to(service, '/v1/assign/consumer')}")
    assert requests_to(service, "/v1/assign/consumer") > asked, "stickyd was not asked"
    assert counters["fallback-total"] == 0, "Kafka's uniform fallback assigned"
    assert counters["request-total"] > 0
    assert "WARN stickyd at" not in broker.log_text()
