"""The consumer plug-in, built against the newest Kafka (plugins/kafka/pom.xml), inside older
brokers: each release whose jars `plugins/kafka/older-broker/pom.xml` copied (4.3.0, or another
with `-Dkafka.version=4.0.0`) runs with stickyd-kafka.jar beside them. A KIP-848 group choosing
`stickyd` is assigned through a real `stickyd serve` (its request counter rises, no fallback in the
broker's log). Skipped when no older release is built."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from stickyd.cli.child_service import ServiceProcess
from tests.kafka.apache_kafka import apache_kafka_broker, stickyd_broker_properties
from tests.kafka.consumer_protocol import Member
from tests.kafka.jvm import PLUGIN_JAR, PLUGIN_TARGET
from tests.service_metrics import requests_to

PARTITIONS = 6
BUILT = sorted(path.name.removeprefix("older-kafka-libs-") for path in PLUGIN_TARGET.glob("older-kafka-libs-*"))


@pytest.mark.parametrize("version", BUILT or ["none built"])
def test_consumer_plugin_assigns_a_kip848_group_in_an_older_broker(version: str, service: ServiceProcess) -> None:
    """The plug-in's class loads in the older group coordinator and answers through stickyd:
    three members settle 2/2/2 on its assignment."""
    libs = PLUGIN_TARGET / f"older-kafka-libs-{version}"
    if not (libs / f"kafka_2.13-{version}.jar").is_file() or not PLUGIN_JAR.is_file():
        pytest.skip("no older broker built: mvn -q -B -f plugins/kafka/older-broker/pom.xml package")
    classpath = f"{libs}/*:{PLUGIN_JAR}"
    with apache_kafka_broker(stickyd_broker_properties(service.url, timeout_ms=2000), classpath=classpath) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for future in admin.create_topics(
            [NewTopic("older", num_partitions=PARTITIONS, replication_factor=1)]
        ).values():
            future.result(timeout=30)
        before = requests_to(service, "/v1/assign/consumer")
        members = [Member(broker.bootstrap, "older-group", f"m{i}", ["older"]) for i in range(3)]
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                owned = [m.owned for m in members]
                if sorted(len(o) for o in owned) == [2, 2, 2] and len(frozenset().union(*owned)) == PARTITIONS:
                    break
                time.sleep(0.2)
            assert sorted(len(m.owned) for m in members) == [2, 2, 2], [m.owned for m in members]
        finally:
            for member in members:
                member.leave()
        assert requests_to(service, "/v1/assign/consumer") > before
        assert "stickyd assignor asks" in broker.log_text()  # configured by the older broker
        assert "assigning with Kafka's uniform assignor" not in broker.log_text()  # no fallback
