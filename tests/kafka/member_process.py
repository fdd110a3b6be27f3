"""A group member in its own process, so that a test can SIGKILL it.

python -m tests.kafka.member_process BOOTSTRAP TOPIC GROUP STICKYD_URL
"""

from __future__ import annotations

import sys

from kafka import KafkaConsumer
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

from stickyd.client.assignor import StickydAssignor
from tests.kafka.harness import SESSION

KAFKA_ASSIGNORS = {
    "range": RangePartitionAssignor,
    "sticky": StickyPartitionAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}


def main() -> None:
    bootstrap, topic, group, url = sys.argv[1:5]
    name = sys.argv[5] if len(sys.argv) > 5 else "stickyd"
    assignor = StickydAssignor(url=url) if name == "stickyd" else KAFKA_ASSIGNORS[name]()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id="doomed",
        partition_assignment_strategy=[assignor],
        **SESSION,
    )
    while True:
        consumer.poll(timeout_ms=100)
        if consumer.assignment():
            print("assigned", flush=True)


if __name__ == "__main__":
    main()
