"""The Apache Kafka fixture is a working broker: topics are created, and every record produced is
consumed by a group on the KIP-848 consumer protocol (the broker's own `uniform` assignor)."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.kafka.apache_kafka import ApacheKafka

RECORDS = 300


def test_records_produced_are_all_consumed_by_a_consumer_protocol_group(apache_kafka: ApacheKafka) -> None:
    admin = AdminClient({"bootstrap.servers": apache_kafka.bootstrap})
    for future in admin.create_topics([NewTopic("fixture-smoke", num_partitions=3, replication_factor=1)]).values():
        future.result(timeout=30)
    producer = Producer({"bootstrap.servers": apache_kafka.bootstrap})
    for n in range(RECORDS):
        producer.produce("fixture-smoke", value=str(n).encode(), partition=n % 3)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": apache_kafka.bootstrap,
            "group.id": "fixture-smoke",
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
        }
    )
    seen: set[int] = set()
    try:
        consumer.subscribe(["fixture-smoke"])
        deadline = time.monotonic() + 30
        while len(seen) < RECORDS and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            value = message.value() if message is not None and message.error() is None else None
            if value is not None:
                seen.add(int(value))
        assert sorted(c.partition for c in consumer.assignment()) == [0, 1, 2]
    finally:
        consumer.close()
    assert seen == set(range(RECORDS))
