"""An aiokafka partition assignor that asks stickyd, and never blocks a rebalance on it.

    consumer = AIOKafkaConsumer(
        "orders", group_id="billing", bootstrap_servers=...,
        partition_assignment_strategy=[StickydAssignor(url="http://stickyd:8000", timeout_ms=1000)],
    )

The classic protocol, eager (aiokafka has no cooperative rebalancing): every member gives up all
its partitions and gets its new assignment at once. Each member's JoinGroup user data carries what
it owns, kept per assignor instance; the group leader turns the members into a contract problem
(`stickyd.client.consumer_mapping`, shared with the kafka-python assignor), asks the service and
falls back to an in-process solve under a short time limit (`stickyd.client.fallback`), logged once
per outage and counted in `fallbacks`.

`balance=`, `load_tolerance=`, `partition_weights=` and `capacity=` balance by load, as in the
kafka-python assignor (`stickyd.client.assignor`).

aiokafka runs `assign` on the leader's event loop, so the loop (and the leader's heartbeats) waits
for it: keep `timeout_ms` plus the 200 ms fallback well under the group's session timeout.
aiokafka tells an assignor no generation, so members report none (-1, KIP-341's "unknown").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from aiokafka.cluster import ClusterMetadata
from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata

from stickyd.client.assignor_base import AssignorSettings
from stickyd.client.consumer_mapping import consumer_problem, encode_user_data, member_entry, sorted_parts

__all__ = ["StickydAssignor"]

PROTOCOL_VERSION = 0
UNKNOWN_GENERATION = -1


class StickydAssignor(AssignorSettings, AbstractPartitionAssignor):
    """The protocol `stickyd`, eager; one instance per consumer (it keeps what that member owns)."""

    name = "stickyd"  # type: ignore[assignment]  # aiokafka declares it an abstract property

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:  # type: ignore[override]
        with self._lock:
            owned = dict(self.owned)
        return ConsumerProtocolMemberMetadata(
            PROTOCOL_VERSION, sorted(topics), encode_user_data(owned, UNKNOWN_GENERATION, self.rack, self.load.capacity)
        )

    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:  # type: ignore[override]
        owned: dict[str, list[int]] = {}
        for topic, partitions in assignment.assignment:
            owned.setdefault(topic, []).extend(partitions)
        with self._lock:
            self.owned = {topic: sorted(partitions) for topic, partitions in owned.items()}

    def assign(  # type: ignore[override]
        self, cluster: ClusterMetadata, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> dict[str, ConsumerProtocolMemberAssignment]:
        entries = [member_entry(mid, meta.subscription, meta.user_data) for mid, meta in sorted(members.items())]
        options = {"strategy": self.strategy, "time_limit_ms": self.time_limit_ms, "protocol": "eager"}
        problem = consumer_problem(entries, lambda topic: _partition_count(cluster, topic), options, self.load)
        solution = self.outage.ask(self.url, problem, self.timeout_ms / 1000, self.fallback_time_limit_ms)
        self.last_solution = solution
        return {
            member_id: ConsumerProtocolMemberAssignment(
                PROTOCOL_VERSION, sorted_parts(solution.assignment.get(member_id, {})), b""
            )
            for member_id in members
        }


def _partition_count(cluster: ClusterMetadata, topic: str) -> int | None:
    partitions = cluster.partitions_for_topic(topic)
    return None if partitions is None else len(partitions)
