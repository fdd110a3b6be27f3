"""A group member in its own process, so that a test can SIGKILL it.

python -m tests.kafka.member_process BOOTSTRAP TOPIC GROUP STICKYD_URL
"""

from __future__ import annotations

import sys

from kafka import KafkaConsumer

from client.assignor import StickydAssignor
from tests.kafka.harness import SESSION


def main() -> None:
    bootstrap, topic, group, url = sys.argv[1:5]
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id="doomed",
        partition_assignment_strategy=[StickydAssignor(url=url)],
        **SESSION,
    )
    while True:
        consumer.poll(timeout_ms=100)
        if consumer.assignment():
            print("assigned", flush=True)


if __name__ == "__main__":
    main()
