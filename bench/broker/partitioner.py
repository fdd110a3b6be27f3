"""Producer partitioners on a real Apache Kafka broker: kafka-python's default, its KIP-480
StickyPartitioner, and stickyd's UniformStickyPartitioner, side by side, plus the KAFKA-10888
simulation.

    python -m bench.broker.partitioner            # 100,000 records of 100 bytes
    python -m bench.broker.partitioner --quick    # 20,000
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.partitioner import DefaultPartitioner
from kafka.partitioner.sticky import StickyPartitioner

from bench import kafka10888
from bench.results import write_section
from stickyd.client.partitioner import UniformStickyPartitioner

PARTITIONS = 12
BURST = 50
RECORD_BYTES = 100


def run(bootstrap: str, topic: str, partitioner: Any, records: int) -> dict[str, Any]:
    """Send null-key records in bursts with flush() after each; count acks per partition and
    read everything back."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0, partitioner=partitioner)
    acked: Counter[int] = Counter()
    value = b"v" * RECORD_BYTES
    started = time.perf_counter()
    for burst in range(0, records, BURST):
        futures = [producer.send(topic, value=value) for _ in range(min(BURST, records - burst))]
        producer.flush()
        for future in futures:
            acked[future.get().partition] += 1
    elapsed = time.perf_counter() - started
    metrics = producer.metrics()["producer-metrics"]
    # batch-size-avg / bytes per record; bytes per record = byte-rate / record-send-rate
    per_batch = metrics["batch-size-avg"] / (metrics["byte-rate"] / metrics["record-send-rate"])
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=3000)
    consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    consumed = sum(1 for _ in consumer)
    consumer.close()
    counts = [acked[p] for p in range(PARTITIONS)]
    mean = records / PARTITIONS
    return {
        "records_per_batch": per_batch,
        "records_per_s": records / elapsed,
        "counts": counts,
        "max_deviation": max(abs(c - mean) / mean for c in counts),
        "consumed": consumed,
    }


PEERS = {
    "kafka-python default": DefaultPartitioner,
    "kafka-python KIP-480 sticky": StickyPartitioner,
    "stickyd uniform sticky": UniformStickyPartitioner,
}


def main() -> None:
    from tests.kafka.apache_kafka import apache_kafka_broker
    from tests.kafka.jvm import kafka_version

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    records = 20_000 if args.quick else 100_000
    header = (
        "| partitioner | records per batch | records/s | largest deviation from the mean | consumed back | "
        "per-partition counts (acks) |\n|---|---:|---:|---:|---:|---|"
    )
    print(header, flush=True)
    rows = []
    with apache_kafka_broker() as broker:
        bootstrap = broker.bootstrap
        for i, (name, cls) in enumerate(PEERS.items()):
            r = run(bootstrap, f"bench-{i}", cls(), records)
            line = (
                f"| {name} | {r['records_per_batch']:.1f} | {r['records_per_s']:.0f} | {r['max_deviation']:.1%} | "
                f"{r['consumed']:,} of {records:,} | {r['counts']} |"
            )
            print(line, flush=True)
            rows.append(line)
    write_section(
        "Producer partitioner on a real broker",
        "\n".join(
            [
                f"{records:,} null-key records of {RECORD_BYTES} bytes to a {PARTITIONS}-partition topic on",
                f"Apache Kafka {kafka_version()} (one KRaft node on 127.0.0.1),",
                f"linger_ms=0, bursts of {BURST} with flush() after each. Records per batch = batch-size-avg /",
                "(byte-rate / record-send-rate) from kafka-python's metrics; counts from the broker's",
                "acknowledgements.",
                "",
                header,
                *rows,
            ]
        ),
    )
    kafka10888.main()


if __name__ == "__main__":
    main()
