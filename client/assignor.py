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

Balance by load (docs/wire-format.md, "What balanced means"): `balance="load"`,
`load_tolerance=`, `partition_weights=` (a dict of topic -> weight(s), a callable returning one
per rebalance, or "live") and `capacity=` (this member's; its user data carries it, so the leader
puts every member's in the request). The leader's in-process fallback solves the same request
(`stickyd.client.load_settings` says how weights are made to fit a round).

`CooperativeStickydAssignor` (KIP-429) hands over in two rounds: partitions that change owner
are first revoked by their owner and only assigned in the follow-up rebalance, exactly as the
contract's `revoke`/`target` describe.
"""

from __future__ import annotations

from typing import Any

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor, RebalanceProtocol
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from stickyd.client.assignor_base import AssignorSettings
from stickyd.client.consumer_mapping import (
    consumer_problem,
    decode_user_data,
    encode_user_data,
    member_entry,
    sorted_parts,
)

__all__ = ["CooperativeStickydAssignor", "StickydAssignor", "decode_user_data", "encode_user_data"]

SUBSCRIPTION_VERSION = 1
"""v1 adds OwnedPartitions, which Kafka's own cooperative assignors read too."""


class StickydAssignor(AssignorSettings, AbstractPartitionAssignor):
    """Eager protocol: every member gives up everything and gets its new assignment at once."""

    name = "stickyd"
    protocol = "eager"

    generation = -1
    """the generation this member's `owned` was assigned in (KIP-341): -1 until `on_assignment` sets
    it on the instance."""

    def supported_protocols(self) -> list[RebalanceProtocol]:
        return [RebalanceProtocol.EAGER]

    def metadata(self, topics: set[str]) -> ConsumerProtocolSubscription:
        with self._lock:
            owned, generation = dict(self.owned), self.generation
        sub_tp = ConsumerProtocolSubscription.TopicPartition
        return ConsumerProtocolSubscription(
            version=SUBSCRIPTION_VERSION,
            topics=sorted(topics),
            user_data=encode_user_data(owned, generation, self.rack, self.load.capacity),
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
        entries = []
        for member in members:
            metadata = member.metadata
            owned = {tp.topic: list(tp.partitions) for tp in getattr(metadata, "owned_partitions", None) or ()}
            entries.append(member_entry(member.member_id, metadata.topics, metadata.user_data, owned))
        options = {"strategy": self.strategy, "time_limit_ms": self.time_limit_ms, "protocol": self.protocol}
        return consumer_problem(entries, lambda topic: _partition_count(cluster, topic), options, self.load)

    def assign(self, cluster: Any, members: list[Any]) -> dict[str, ConsumerProtocolAssignment]:
        problem = self.problem(cluster, members)
        solution = self.outage.ask(self.url, problem, self.timeout_ms / 1000, self.fallback_time_limit_ms)
        self.last_solution = solution
        return {
            member_id: ConsumerProtocolAssignment(SUBSCRIPTION_VERSION, sorted_parts(parts), b"")
            for member_id, parts in solution.assignment.items()
        }


def _partition_count(cluster: Any, topic: str) -> int | None:
    partitions = cluster.partitions_for_topic(topic)
    return None if partitions is None else len(partitions)


class CooperativeStickydAssignor(StickydAssignor):
    """KIP-429: only partitions that change owner pause, across two rebalance rounds."""

    name = "stickyd-cooperative"
    protocol = "cooperative"

    def supported_protocols(self) -> list[RebalanceProtocol]:
        return [RebalanceProtocol.COOPERATIVE]
