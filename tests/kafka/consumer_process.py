"""A KIP-848 group member (confluent-kafka, `group.protocol=consumer`) in its own process, so that a
run can SIGKILL it: no leave, no commit; the coordinator notices after the session timeout.

The process prints what it owns as one JSON line after every change; `MemberProcess` reads them and
offers the interface of `tests.kafka.consumer_protocol.Member` (`name`, `owned`, `leave()`) plus
`kill()`.

    python -m tests.kafka.consumer_process BOOTSTRAP GROUP NAME ASSIGNOR TOPIC...
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from tests.kafka.consumer_protocol import TP, member_config

CONFIG_VARIABLE = "MEMBER_CONFIG"
"""The member's librdkafka properties over `member_config`'s, as JSON."""


class MemberProcess:
    def __init__(
        self,
        bootstrap: str,
        group: str,
        name: str,
        topics: list[str],
        assignor: str = "stickyd",
        config: Mapping[str, Any] | None = None,
    ) -> None:
        """`config`: librdkafka properties over `member_config`'s."""
        self.name = name
        self._owned: frozenset[TP] = frozenset()
        self._lock = threading.Lock()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.kafka.consumer_process", bootstrap, group, name, assignor, *topics],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, CONFIG_VARIABLE: json.dumps(dict(config or {}))},
        )
        self._reader = threading.Thread(target=self._read, name=f"{name}-reader", daemon=True)
        self._reader.start()

    @property
    def owned(self) -> frozenset[TP]:
        with self._lock:
            return self._owned

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            owned = frozenset((topic, partition) for topic, partition in json.loads(line))
            with self._lock:
                self._owned = owned

    def kill(self) -> None:
        """SIGKILL: the member vanishes without leaving the group."""
        self.process.kill()
        self.process.wait()

    def leave(self, grace_s: float = 10.0) -> None:
        """SIGTERM: the member closes its consumer (leaves the group); SIGKILL after grace_s."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self.kill()
        self._reader.join(timeout=5)


def main() -> None:
    bootstrap, group, name, assignor, *topics = sys.argv[1:]
    owned: set[TP] = set()
    stop = threading.Event()

    def report() -> None:
        print(json.dumps(sorted(owned)), flush=True)

    def on_assign(_: Any, partitions: list[TopicPartition]) -> None:
        owned.update((tp.topic, tp.partition) for tp in partitions)
        report()

    def on_revoke(_: Any, partitions: list[TopicPartition]) -> None:
        owned.difference_update((tp.topic, tp.partition) for tp in partitions)
        report()

    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    config = json.loads(os.environ.get(CONFIG_VARIABLE, "{}"))
    consumer = Consumer({**member_config(bootstrap, group, name, assignor), **config})
    consumer.subscribe(topics, on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    try:
        while not stop.is_set():
            consumer.poll(0.1)
    finally:
        consumer.close()


if __name__ == "__main__":
    main()
