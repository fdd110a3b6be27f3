"""A kafka-python 3.x partition assignor that asks stickyd, and never blocks a rebalance on it.

    consumer = KafkaConsumer(
        "orders", group_id="billing", bootstrap_servers=...,
        partition_assignment_strategy=[StickydAssignor(url="http://stickyd:8000", timeout_ms=1000)],
    )

Each member's JoinGroup subscription carries, in its user data, what it owns and the
generation it got it in (KIP-341), kept per assignor instance (never on the class, so two
consumers in one process do not share state). The group leader turns the members into a
contract problem, asks the service, and turns the answer into Kafka assignments. If the
service is unreachable, slow or answers an error, the leader solves in-process under a short
time limit, logs once per outage, and counts it (`fallbacks`).

`CooperativeStickydAssignor` (KIP-429) hands over in two rounds: partitions that change owner
are first revoked by their owner and only assigned in the follow-up rebalance, exactly as the
contract's `revoke`/`target` describe.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor, RebalanceProtocol
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from stickyd.client.fallback import assign_consumer_or_solve
from stickyd.models import ConsumerSolution
from stickyd.solvers.time_policy import ASSIGNOR_FALLBACK_TIME_LIMIT_MS, ASSIGNOR_TIME_LIMIT_MS, ASSIGNOR_TIMEOUT_MS

log = logging.getLogger(__name__)

USER_DATA_VERSION = 1
SUBSCRIPTION_VERSION = 1
"""v1 adds OwnedPartitions, which Kafka's own cooperative assignors read too."""


def encode_user_data(owned: dict[str, list[int]], generation: int, rack: str | None) -> bytes:
    return json.dumps({"v": USER_DATA_VERSION, "owned": owned, "generation": generation, "rack": rack}).encode()


def decode_user_data(raw: bytes | None) -> dict[str, Any]:
    """What a member reported; anything unreadable counts as a fresh member."""
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        log.warning("ignoring unreadable stickyd user data")
        return {}
    return data if isinstance(data, dict) and data.get("v") == USER_DATA_VERSION else {}


class StickydAssignor(AbstractPartitionAssignor):
    """Eager protocol: every member gives up everything and gets its new assignment at once."""

    name = "stickyd"
    protocol = "eager"

    def __init__(
        self,
        url: str = "http://127.0.0.1:8000",
        timeout_ms: int = ASSIGNOR_TIMEOUT_MS,
        strategy: str = "optimal",
        time_limit_ms: int = ASSIGNOR_TIME_LIMIT_MS,
        fallback_time_limit_ms: int = ASSIGNOR_FALLBACK_TIME_LIMIT_MS,
        rack: str | None = None,
    ) -> None:
        self.url = url
        self.timeout_ms = timeout_ms
        self.strategy = strategy
        self.time_limit_ms = time_limit_ms
        self.fallback_time_limit_ms = fallback_time_limit_ms
        self.rack = rack
        # per-instance state (KIP-341): what this member owns and since which generation
        self.owned: dict[str, list[int]] = {}
        self.generation = -1
        self.fallbacks = 0
        self.last_solution: ConsumerSolution | None = None
        self._outage = False
        self._lock = threading.Lock()

    def supported_protocols(self) -> list[RebalanceProtocol]:
        return [RebalanceProtocol.EAGER]

    def metadata(self, topics: set[str]) -> ConsumerProtocolSubscription:
        with self._lock:
            owned, generation = dict(self.owned), self.generation
        sub_tp = ConsumerProtocolSubscription.TopicPartition
        return ConsumerProtocolSubscription(
            version=SUBSCRIPTION_VERSION,
            topics=sorted(topics),
            user_data=encode_user_data(owned, generation, self.rack),
            owned_partitions=[sub_tp(topic=t, partitions=sorted(p)) for t, p in sorted(owned.items())],
        )

    def on_assignment(self, assignment: ConsumerProtocolAssignment, generation: int) -> None:
        owned: dict[str, list[int]] = {}
        for topic, partitions in assignment.assigned_partitions:
            owned.setdefault(topic, []).extend(partitions)
        with self._lock:
            self.owned = {t: sorted(p) for t, p in owned.items()}
            self.generation = generation

    def problem(self, cluster: Any, members: list[Any]) -> dict[str, Any]:
        """The contract problem for this JoinGroup round."""
        topics: dict[str, int] = {}
        group: list[dict[str, Any]] = []
        for member in members:
            metadata = member.metadata
            for topic in metadata.topics:
                partitions = cluster.partitions_for_topic(topic)
                if partitions is not None:
                    topics[topic] = len(partitions)
            data = decode_user_data(metadata.user_data)
            owned = data.get("owned")
            if not isinstance(owned, dict):
                owned = {tp.topic: list(tp.partitions) for tp in getattr(metadata, "owned_partitions", None) or ()}
            entry: dict[str, Any] = {"id": member.member_id, "topics": sorted(metadata.topics), "owned": owned}
            if isinstance(data.get("generation"), int) and data["generation"] >= -1:
                entry["generation"] = data["generation"]
            if isinstance(data.get("rack"), str) and data["rack"]:
                entry["rack"] = data["rack"]
            group.append(entry)
        options = {"strategy": self.strategy, "time_limit_ms": self.time_limit_ms, "protocol": self.protocol}
        return {"topics": topics, "members": group, "options": options}

    def assign(self, cluster: Any, members: list[Any]) -> dict[str, ConsumerProtocolAssignment]:
        problem = self.problem(cluster, members)
        solution = self._ask_service(problem)
        self.last_solution = solution
        return {
            member_id: ConsumerProtocolAssignment(
                SUBSCRIPTION_VERSION, sorted((t, sorted(p)) for t, p in parts.items()), b""
            )
            for member_id, parts in solution.assignment.items()
        }

    def _ask_service(self, problem: dict[str, Any]) -> ConsumerSolution:
        solution, error = assign_consumer_or_solve(
            self.url, problem, self.timeout_ms / 1000, self.fallback_time_limit_ms
        )
        if error is not None:  # the group rebalanced anyway, in-process
            self.fallbacks += 1
            if not self._outage:
                log.warning("stickyd at %s unavailable (%s); assigning in-process until it is back", self.url, error)
            self._outage = True
            return solution
        if self._outage:
            log.info("stickyd at %s answers again", self.url)
        self._outage = False
        return solution


class CooperativeStickydAssignor(StickydAssignor):
    """KIP-429: only partitions that change owner pause, across two rebalance rounds."""

    name = "stickyd-cooperative"
    protocol = "cooperative"

    def supported_protocols(self) -> list[RebalanceProtocol]:
        return [RebalanceProtocol.COOPERATIVE]
