"""A strictly uniform sticky partitioner for kafka-python 3.x producers (KIP-480, KIP-794).

    producer = KafkaProducer(bootstrap_servers=..., partitioner=UniformStickyPartitioner())

Records without a key (all records with `ignore_keys=True`) stick to one partition until
`batch_size` bytes went to it, then switch. Every available partition gets one stint per
cycle, in a fresh random order each cycle, so per-partition counts never drift apart by more
than a stint (independent random draws drift by ~13% per partition over 100,000 records).

Adaptive mode (KIP-794's `partitioner.adaptive.partitioning.enable`) leaves a partition out of
the current cycle while its backlog of unacknowledged bytes is more than `adaptive_slack`
above the least-loaded partition's, so a slow broker gets less, never more, than its share;
with `availability_timeout_ms`, a partition with a backlog that has not drained for that long
is skipped too. Partitions whose leader is unavailable are always skipped. The backlog is fed
by `BacklogTracker.send` (a wrapper of `KafkaProducer.send` that counts bytes in flight per
partition through the send futures).

Keyed records keep Kafka's murmur2 placement, identical to the Java client's.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka.partitioner import Partitioner
from kafka.partitioner.default import murmur2


@dataclass
class _TopicState:
    current: int | None = None
    stint_bytes: int = 0
    cycle: list[int] = field(default_factory=list)
    total: dict[int, int] = field(default_factory=dict)
    """bytes sent to each partition: a partition ahead by a full batch sits a cycle out."""


class UniformStickyPartitioner(Partitioner):
    def __init__(
        self,
        batch_size: int = 16384,
        ignore_keys: bool = False,
        adaptive: bool = False,
        adaptive_slack: int | None = None,
        availability_timeout_ms: int = 0,
        seed: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        self.batch_size = batch_size
        self.ignore_keys = ignore_keys
        self.adaptive = adaptive
        self.adaptive_slack = 2 * batch_size if adaptive_slack is None else adaptive_slack
        self.availability_timeout_s = availability_timeout_ms / 1000
        self._random = random.Random(seed)
        self._clock = clock
        self._lock = threading.Lock()
        self._topics: dict[str, _TopicState] = {}
        self._backlog: dict[tuple[str, int], int] = {}
        self._drained_at: dict[tuple[str, int], float] = {}
        self._last = threading.local()

    # -- kafka-python's Partitioner interface ------------------------------------------------
    def partition(
        self,
        topic: str,
        key: Any,
        serialized_key: bytes | None,
        value: Any,
        serialized_value: bytes | None,
        cluster: Any,
    ) -> int:
        if topic not in cluster.topics():
            raise ValueError(f"Topic {topic} not found in ClusterMetadata")
        all_partitions = sorted(cluster.partitions_for_topic(topic))
        size = len(serialized_key or b"") + len(serialized_value or b"")
        if serialized_key is not None and not self.ignore_keys:
            chosen = all_partitions[(murmur2(serialized_key) & 0x7FFFFFFF) % len(all_partitions)]
        else:
            available = set(cluster.available_partitions_for_topic(topic)) or set(all_partitions)
            chosen = self._sticky(topic, all_partitions, available, size)
        self._last.choice = (topic, chosen, size)
        return chosen

    def on_new_batch(self, topic: str, cluster: Any, prev_partition: int) -> None:
        """kafka-python's KIP-480 hook: the producer is about to open a new batch. A stint that
        already filled half a batch ends here, so batches stay whole; the byte ledger keeps the
        partitions within a stint of each other all the same."""
        with self._lock:
            state = self._topics.get(topic)
            if state is not None and state.current == prev_partition and state.stint_bytes >= self.batch_size // 2:
                state.stint_bytes = self.batch_size

    # -- the sticky, strictly uniform rule -----------------------------------------------------
    def _sticky(self, topic: str, all_partitions: list[int], available: set[int], size: int) -> int:
        with self._lock:
            state = self._topics.setdefault(topic, _TopicState())
            # switch after batch_size bytes (KIP-794), or off a partition that became unusable
            if state.current is None or state.stint_bytes >= self.batch_size or state.current not in available:
                state.current = self._next(topic, state, all_partitions, available)
                state.stint_bytes = 0
            state.stint_bytes += size
            state.total[state.current] = state.total.get(state.current, 0) + size
            return state.current

    def _next(self, topic: str, state: _TopicState, all_partitions: list[int], available: set[int]) -> int:
        usable = [p for p in all_partitions if p in available and self._draining(topic, p)] or sorted(available)
        if self.adaptive:
            least = min(self._backlog.get((topic, p), 0) for p in usable)
            usable = [p for p in usable if self._backlog.get((topic, p), 0) - least <= self.adaptive_slack]
        state.cycle = [p for p in state.cycle if p in usable]
        if not state.cycle:
            # a new cycle: every usable partition once (but one a full batch ahead, after stints
            # cut short at batch boundaries), in a fresh random order
            least = min(state.total.get(p, 0) for p in usable)
            state.cycle = [p for p in usable if state.total.get(p, 0) - least < self.batch_size]
            self._random.shuffle(state.cycle)
            if self.adaptive:
                # the partitions that drain slowest take their stint last
                state.cycle.sort(key=lambda p: self._backlog.get((topic, p), 0))
            if len(state.cycle) > 1 and state.cycle[0] == state.current:
                state.cycle.append(state.cycle.pop(0))
        return state.cycle.pop(0)

    def _draining(self, topic: str, partition: int) -> bool:
        """KIP-794's availability timeout: a partition with bytes in flight that has not
        acknowledged anything for that long is skipped."""
        if not self.availability_timeout_s or not self._backlog.get((topic, partition)):
            return True
        since = self._drained_at.get((topic, partition), self._clock())
        return self._clock() - since <= self.availability_timeout_s

    # -- backlog, fed by BacklogTracker ---------------------------------------------------------
    def last_choice(self) -> tuple[str, int, int] | None:
        """(topic, partition, serialized bytes) of this thread's last partition() call."""
        return getattr(self._last, "choice", None)

    def sent(self, topic: str, partition: int, size: int) -> None:
        with self._lock:
            key = (topic, partition)
            if not self._backlog.get(key):
                self._drained_at[key] = self._clock()
            self._backlog[key] = self._backlog.get(key, 0) + size

    def acknowledged(self, topic: str, partition: int, size: int) -> None:
        with self._lock:
            key = (topic, partition)
            self._backlog[key] = max(0, self._backlog.get(key, 0) - size)
            self._drained_at[key] = self._clock()

    def backlog(self, topic: str, partition: int) -> int:
        with self._lock:
            return self._backlog.get((topic, partition), 0)


class BacklogTracker:
    """`KafkaProducer.send` that tells the partitioner how many bytes each partition still owes.

    partitioner = UniformStickyPartitioner(adaptive=True, availability_timeout_ms=5000)
    producer = BacklogTracker(KafkaProducer(partitioner=partitioner, ...), partitioner)
    producer.send("events", value=b"...")     # same signature, same future
    """

    def __init__(self, producer: Any, partitioner: UniformStickyPartitioner) -> None:
        self.producer = producer
        self.partitioner = partitioner

    def send(self, topic: str, value: bytes | None = None, key: bytes | None = None, **kwargs: Any) -> Any:
        future = self.producer.send(topic, value=value, key=key, **kwargs)
        choice = self.partitioner.last_choice()
        if choice is None or choice[0] != topic:
            return future
        _, partition, size = choice
        self.partitioner.sent(topic, partition, size)

        def done(_: Any) -> None:
            self.partitioner.acknowledged(topic, partition, size)

        future.add_both(done)
        return future

    def __getattr__(self, name: str) -> Any:
        return getattr(self.producer, name)
