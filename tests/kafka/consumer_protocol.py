"""Consumer groups on the KIP-848 consumer rebalance protocol (confluent-kafka, `group.protocol=consumer`)
on a real broker: members poll on their own threads and record what they own (updated inside the
rebalance callbacks, before the client acknowledges to the coordinator), what they consume, and the
round-trip times librdkafka measures on its connection to the group coordinator."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

TP = tuple[str, int]


class Owning(Protocol):
    """A member as `settle` sees it: its client id and what it owns now."""

    @property
    def name(self) -> str: ...

    @property
    def owned(self) -> frozenset[TP]: ...


def member_config(bootstrap: str, group: str, name: str, assignor: str) -> dict[str, Any]:
    """A KIP-848 member's configuration: the server-side `assignor`, metadata refreshed every second."""
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "client.id": name,
        "group.protocol": "consumer",
        "group.remote.assignor": assignor,
        "auto.offset.reset": "earliest",
        "auto.commit.interval.ms": 200,
        "topic.metadata.refresh.interval.ms": 1000,
    }


class Member:
    def __init__(self, bootstrap: str, group: str, name: str, topics: list[str], assignor: str = "stickyd") -> None:
        self.name = name
        self.topics = list(topics)
        self.consumed: set[bytes] = set()
        self.coordinator_rtt_max_us: list[int] = []
        self._owned: frozenset[TP] = frozenset()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.consumer = Consumer(
            {
                **member_config(bootstrap, group, name, assignor),
                "statistics.interval.ms": 500,
                "stats_cb": self._on_stats,
            }
        )
        self.consumer.subscribe(
            self.topics, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_revoke
        )
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def owned(self) -> frozenset[TP]:
        with self._lock:
            return self._owned

    def _on_assign(self, _: Any, partitions: list[TopicPartition]) -> None:
        with self._lock:
            self._owned = self._owned | {(tp.topic, tp.partition) for tp in partitions}

    def _on_revoke(self, _: Any, partitions: list[TopicPartition]) -> None:
        with self._lock:
            self._owned = self._owned - {(tp.topic, tp.partition) for tp in partitions}

    def _on_stats(self, stats_json: str) -> None:
        for broker in json.loads(stats_json).get("brokers", {}).values():
            if broker.get("name", "").startswith("GroupCoordinator") and broker.get("rtt", {}).get("cnt", 0):
                self.coordinator_rtt_max_us.append(int(broker["rtt"]["max"]))

    def _run(self) -> None:
        while not self._stop.is_set():
            message = self.consumer.poll(0.1)
            value = message.value() if message is not None and message.error() is None else None
            if value is not None:
                self.consumed.add(value)

    def leave(self) -> None:
        """Stops polling and closes the consumer, which leaves the group."""
        self._stop.set()
        self._thread.join(timeout=10)
        self.consumer.close()


class Feeder:
    """Produces numbered records round-robin over the given partitions on its own thread until
    stopped; `produced` holds every value the broker acknowledged."""

    def __init__(self, bootstrap: str, partitions: Iterable[TP], every_s: float = 0.01) -> None:
        self.partitions = list(partitions)
        self.produced: set[bytes] = set()
        self._every_s = every_s
        self._stop = threading.Event()
        self._producer = Producer(
            {"bootstrap.servers": bootstrap, "linger.ms": 5, "topic.metadata.refresh.interval.ms": 500}
        )
        self._thread = threading.Thread(target=self._run, name="feeder", daemon=True)
        self._thread.start()

    def add_partitions(self, partitions: Iterable[TP]) -> None:
        self.partitions = self.partitions + list(partitions)

    def _delivered(self, error: Any, message: Any) -> None:
        if error is None:
            self.produced.add(message.value())

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            topic, partition = self.partitions[n % len(self.partitions)]
            # a partition just added may be unknown to the producer until its next metadata refresh
            with suppress(KafkaException):
                self._producer.produce(
                    topic, value=f"{topic}/{n}".encode(), partition=partition, on_delivery=self._delivered
                )
            self._producer.poll(0)
            n += 1
            time.sleep(self._every_s)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._producer.flush(30)


def snapshot(members: Iterable[Owning]) -> dict[str, frozenset[TP]]:
    return {m.name: m.owned for m in members}


def settle(
    members: Sequence[Owning],
    partitions: set[TP],
    admin: AdminClient,
    group: str,
    until: Callable[[dict[str, frozenset[TP]]], bool] = lambda _: True,
    quiet_s: float = 0.6,
    timeout_s: float = 30.0,
) -> tuple[dict[str, frozenset[TP]], list[str]]:
    """Samples every member's ownership every 20 ms until the group is settled: the coordinator
    describes exactly these members (by client id), each one's current assignment equal to its target
    assignment and to what the member itself owns, and every partition owned, unchanged over quiet_s
    (the coordinator computes a new target up to group.consumer.assignment.interval.ms after a
    join, and a joiner's empty target equals its empty assignment meanwhile, so a test also says
    which state it waits for with `until`; a group that never gets there fails). Returns the settled
    assignment and every sampled instant at which some partition had two owners (there must be none)."""
    overlaps: list[str] = []
    deadline = time.monotonic() + timeout_s
    now: dict[str, frozenset[TP]] = {}
    agreed: tuple[float, dict[str, frozenset[TP]]] | None = None
    n = 0
    while time.monotonic() < deadline:
        now = snapshot(members)
        seen: dict[TP, str] = {}
        for name, owned in now.items():
            for tp in owned:
                if tp in seen:
                    overlaps.append(f"{tp} owned by {seen[tp]} and {name}")
                seen[tp] = name
        n += 1
        if n % 5 == 0:
            if set(seen) != partitions or not until(now) or not coordinator_agrees(admin, group, now):
                agreed = None
            elif agreed is None or agreed[1] != now:
                agreed = (time.monotonic(), now)
            elif time.monotonic() - agreed[0] >= quiet_s:
                return now, overlaps
        time.sleep(0.02)
    raise AssertionError(f"group did not settle within {timeout_s} s: {now}")


def coordinator_agrees(admin: AdminClient, group: str, owned: dict[str, frozenset[TP]]) -> bool:
    description = admin.describe_consumer_groups([group], request_timeout=5)[group].result(timeout=10)
    described: dict[str, frozenset[TP]] = {}
    for member in description.members:
        current = frozenset((tp.topic, tp.partition) for tp in member.assignment.topic_partitions)
        target = member.target_assignment
        if target is None or current != frozenset((tp.topic, tp.partition) for tp in target.topic_partitions):
            return False
        described[member.client_id] = current
    return described == owned


def wait_consumed(members: Iterable[Member], produced: set[bytes], timeout_s: float = 20.0) -> set[bytes]:
    """Waits until every produced value was consumed by some member; returns what is still missing."""
    deadline = time.monotonic() + timeout_s
    missing = set(produced)
    while missing and time.monotonic() < deadline:
        for member in members:
            missing -= member.consumed.copy()
        time.sleep(0.1)
    return missing
