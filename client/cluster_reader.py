"""Read a live Kafka cluster's consumer groups through the Admin API, as plain data.

confluent-kafka's AdminClient lists the groups (with their protocol: classic or KIP-848 `consumer`),
the topics' partition counts and replica racks, committed offsets and end offsets. It does not
expose what a member subscribed to, its generation or epoch, or its rack (librdkafka drops them), so
the member details come from the group coordinator itself through kafka-python: DescribeGroups
(classic groups, the ConsumerProtocol subscription decoded: topics, owned partitions, generation,
rack) and ConsumerGroupDescribe (KIP-848 groups: subscribed topics, member epoch, rack, assignment
and target assignment; its message schema is in `client/kafka_messages/`).

Connection settings are named as Kafka names them (`bootstrap.servers`, `security.protocol`,
`sasl.mechanism`, `sasl.username`, `sasl.password`, `ssl.ca.location`, ...); see `KAFKA_PYTHON_NAMES`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Partitions = dict[str, list[int]]

KAFKA_PYTHON_NAMES: dict[str, str] = {
    "bootstrap.servers": "bootstrap_servers",
    "client.id": "client_id",
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "sasl.kerberos.service.name": "sasl_kerberos_service_name",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "ssl.endpoint.identification.algorithm": "ssl_check_hostname",
    "request.timeout.ms": "request_timeout_ms",
}
"""Kafka's setting names (as librdkafka spells them) -> kafka-python's, for the coordinator reads."""


class ClusterError(RuntimeError):
    """The cluster cannot be read (unreachable, refused, unknown setting); the message says which."""


@dataclass(frozen=True)
class MemberState:
    member_id: str
    client_id: str
    host: str
    subscription: tuple[str, ...]
    assignment: Partitions
    generation: int | None = None
    """Classic: the generation the member's subscription names (-1 when its client sends none);
    KIP-848: the member epoch."""
    rack: str | None = None
    instance_id: str | None = None
    target: Partitions | None = None
    """KIP-848 only: the assignment the coordinator is moving this member to."""


@dataclass(frozen=True)
class GroupState:
    group_id: str
    protocol: str
    """`classic` or `consumer` (KIP-848)."""
    state: str
    assignor: str
    members: tuple[MemberState, ...]
    epoch: int | None = None
    """KIP-848 group epoch (classic groups' generation is not in DescribeGroups)."""


@dataclass(frozen=True)
class OffsetState:
    group_id: str
    topic: str
    partition: int
    committed: int | None
    end: int


@dataclass
class ClusterState:
    groups: list[GroupState] = field(default_factory=list)
    partitions: dict[str, int] = field(default_factory=dict)
    partition_racks: dict[str, list[list[str]]] = field(default_factory=dict)
    offsets: list[OffsetState] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Groups not read, each with the reason (empty, another protocol type, an error)."""
    ends_at: float | None = None
    """monotonic time just after the end offsets in `offsets` were read."""
    rates: dict[tuple[str, int], float | None] = field(default_factory=dict)
    """(topic, partition) -> records/s produced there between two readings (`measure_rates`);
    None where the end offset went back (the topic was created again)."""
    rate_window_s: float | None = None


def kafka_python_config(settings: Mapping[str, str]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for name, value in settings.items():
        if name not in KAFKA_PYTHON_NAMES:
            known = ", ".join(sorted(KAFKA_PYTHON_NAMES))
            raise ClusterError(f"{name}: setting not supported by `stickyd snapshot` (supported: {known})")
        target = KAFKA_PYTHON_NAMES[name]
        if target == "ssl_check_hostname":
            config[target] = value.lower() == "https"
        elif target == "request_timeout_ms":
            config[target] = int(value)
        else:
            config[target] = value
    return config


def read_cluster(settings: Mapping[str, str], groups: Iterable[str] = (), timeout_s: float = 30.0) -> ClusterState:
    """Every consumer group (or only `groups`), with the topics they use and their offsets."""
    from confluent_kafka.admin import AdminClient

    kafka_python_config(settings)  # refuse an unknown setting before connecting
    admin = AdminClient({**settings, "socket.timeout.ms": int(timeout_s * 1000)})
    state = ClusterState()
    wanted = set(groups)
    listed = _list_groups(admin, timeout_s)
    classic = sorted(g for g, kind in listed.items() if kind == "classic" and (not wanted or g in wanted))
    modern = sorted(g for g, kind in listed.items() if kind == "consumer" and (not wanted or g in wanted))
    state.skipped += [f"{g}: {kind} group (not a consumer group)" for g, kind in sorted(listed.items())
                      if kind not in ("classic", "consumer") and (not wanted or g in wanted)]  # fmt: skip
    state.skipped += [f"{g}: no such group" for g in sorted(wanted - set(listed))]
    from stickyd.client.coordinator_reads import describe_groups

    described, skipped = describe_groups(kafka_python_config(settings), classic, modern)
    state.skipped += skipped
    state.groups = [g for g in described if g.members]
    state.skipped += [f"{g.group_id}: no members" for g in described if not g.members]
    topics = sorted({t for g in state.groups for m in g.members for t in (*m.subscription, *m.assignment)})
    state.partitions, state.partition_racks = _topic_partitions(admin, topics, timeout_s)
    used = {g.group_id: {t for m in g.members for t in (*m.subscription, *m.assignment)} for g in state.groups}
    ends = end_offsets(admin, state.partitions, timeout_s)
    state.ends_at = time.monotonic()
    state.offsets = _offsets(admin, used, ends, timeout_s)
    return state


def measure_rates(settings: Mapping[str, str], state: ClusterState, window_s: float, timeout_s: float = 30.0) -> None:
    """Reads the end offsets again `window_s` after `read_cluster` did, and sets `state.rates`:
    records/s per partition of the groups' topics (the Admin API tells records, not bytes)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    if state.ends_at is None or not state.offsets:
        return
    first = {(o.topic, o.partition): o.end for o in state.offsets}
    admin = AdminClient({**settings, "socket.timeout.ms": int(timeout_s * 1000)})
    try:
        admin.list_topics(timeout=timeout_s)  # connected before the window ends: the reading is on time
        time.sleep(max(0.0, state.ends_at + window_s - time.monotonic()))
        then = end_offsets(admin, state.partitions, timeout_s)
    except KafkaException as error:
        raise ClusterError(f"cannot read end offsets: {error.args[0].str()}") from None
    span = time.monotonic() - state.ends_at
    state.rate_window_s = span
    state.rates = {
        key: None if key not in then or then[key] < end else (then[key] - end) / span for key, end in first.items()
    }


def _list_groups(admin: Any, timeout_s: float) -> dict[str, str]:
    """group id -> protocol type name (`classic`, `consumer`, `streams`, `share`, ...)."""
    from confluent_kafka import KafkaException

    try:
        result = admin.list_consumer_groups(request_timeout=timeout_s).result(timeout=timeout_s + 5)
    except KafkaException as error:
        raise ClusterError(f"cannot list consumer groups: {error.args[0].str()}") from None
    out: dict[str, str] = {}
    for listing in result.valid:
        kind = getattr(listing, "type", None)
        out[listing.group_id] = kind.name.lower() if kind is not None else "classic"
    return out


def _topic_partitions(
    admin: Any, topics: list[str], timeout_s: float
) -> tuple[dict[str, int], dict[str, list[list[str]]]]:
    """Partition counts, and each partition's replica racks where every broker names a rack."""
    from confluent_kafka import KafkaException

    if not topics:
        return {}, {}
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException as error:
        raise ClusterError(f"cannot read topic metadata: {error.args[0].str()}") from None
    counts = {t: len(metadata.topics[t].partitions) for t in topics if t in metadata.topics}
    racks: dict[str, list[list[str]]] = {}
    from confluent_kafka import TopicCollection

    described = admin.describe_topics(TopicCollection(list(counts)), request_timeout=timeout_s)
    for topic, future in described.items():
        description = future.result(timeout=timeout_s + 5)
        per_partition = [
            sorted({r.rack for r in p.replicas if r.rack}) for p in sorted(description.partitions, key=lambda p: p.id)
        ]
        if per_partition and all(per_partition):
            racks[topic] = per_partition
    return counts, racks


def _offsets(
    admin: Any, used: dict[str, set[str]], ends: dict[tuple[str, int], int], timeout_s: float
) -> list[OffsetState]:
    """Committed offset (None when the group never committed there) and end offset (`ends`) of
    every partition of every topic a group subscribes to or is assigned."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    out: list[OffsetState] = []
    for group_id, topics in used.items():
        request = [ConsumerGroupTopicPartitions(group_id)]
        result = admin.list_consumer_group_offsets(request, request_timeout=timeout_s)[group_id]
        committed = {
            (tp.topic, tp.partition): tp.offset
            for tp in result.result(timeout=timeout_s + 5).topic_partitions
            if tp.error is None and tp.offset >= 0
        }
        out.extend(
            OffsetState(group_id, topic, partition, committed.get((topic, partition)), end)
            for (topic, partition), end in sorted(ends.items())
            if topic in topics
        )
    return out


def end_offsets(admin: Any, partitions: Mapping[str, int], timeout_s: float) -> dict[tuple[str, int], int]:
    """(topic, partition) -> its end offset (the offset the next record produced there gets), for
    every partition of `partitions` (topic -> partition count); one ListOffsets round."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    every = [TopicPartition(t, p) for t, n in sorted(partitions.items()) for p in range(n)]
    if not every:
        return {}
    answered = admin.list_offsets({tp: OffsetSpec.latest() for tp in every}, request_timeout=timeout_s)
    return {
        (tp.topic, tp.partition): int(future.result(timeout=timeout_s + 5).offset) for tp, future in answered.items()
    }
