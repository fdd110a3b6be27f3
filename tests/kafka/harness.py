"""A consumer group on a real broker: members poll on their own threads and record what they
own, every rebalance listener call and every record they consume."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from kafka import ConsumerRebalanceListener, KafkaConsumer, KafkaProducer

SESSION = {
    "session_timeout_ms": 2000,
    "heartbeat_interval_ms": 300,
    "max_poll_interval_ms": 10_000,
    "metadata_max_age_ms": 1000,
}

# Longer than a whole rebalance (JoinGroup, the leader's assignor with its 1 s HTTP timeout and
# fallback, SyncGroup). kafka-python 3.0.12 finishes a join only inside the poll() that started it
# when the leader rejoined for a metadata change (partitions added): its need_rejoin() turns False
# as soon as the leader has assigned (it lacks KAFKA-9815's rejoin flag), so a join that outlived
# its poll() is never completed, the leader stops heartbeating, is dropped after the session
# timeout and never rejoins (README).
POLL_TIMEOUT_MS = 5000


class Member(ConsumerRebalanceListener):
    def __init__(self, bootstrap: str, topic: str, group: str, name: str, assignor: Any) -> None:
        self.name = name
        self.assignor = assignor
        self.events: list[tuple[float, str, frozenset[int]]] = []
        self.consumed: Counter[str] = Counter()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._owned: frozenset[int] = frozenset()
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=name,
            partition_assignment_strategy=[assignor],
            auto_offset_reset="earliest",
            **SESSION,
        )
        self.consumer.subscribe([topic], listener=self)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def on_partitions_revoked(self, revoked: Any) -> None:
        with self._lock:
            self._owned = self._owned - {tp.partition for tp in revoked}
            self.events.append((time.monotonic(), "revoked", frozenset(tp.partition for tp in revoked)))

    def on_partitions_assigned(self, assigned: Any) -> None:
        with self._lock:
            self._owned = self._owned | {tp.partition for tp in assigned}
            self.events.append((time.monotonic(), "assigned", frozenset(tp.partition for tp in assigned)))

    def on_partitions_lost(self, lost: Any) -> None:
        self.on_partitions_revoked(lost)

    def owned(self) -> frozenset[int]:
        """What this member may consume now, by its rebalance listener."""
        with self._lock:
            return self._owned

    def _run(self) -> None:
        while not self._stop.is_set():
            for records in self.consumer.poll(timeout_ms=POLL_TIMEOUT_MS).values():
                for record in records:
                    self.consumed[record.key.decode()] += 1

    def leave(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.consumer.close()


def wait_until(condition: Callable[[], bool], timeout_s: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def balanced(members: list[Member], partitions: int) -> bool:
    """Every partition owned exactly once, loads differing by at most one."""
    owned = [m.owned() for m in members]
    union = frozenset().union(*owned)
    loads = [len(o) for o in owned]
    return len(union) == partitions == sum(loads) and max(loads) - min(loads) <= 1


def produce(bootstrap: str, topic: str, keys: list[str]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    for key in keys:
        producer.send(topic, key=key.encode(), value=b"x")
    producer.flush()
    producer.close()
