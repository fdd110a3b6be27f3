"""The watched Kafka cluster as the service reports it (GET /v1/cluster/rates, GET /v1/cluster/groups)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

Partitions = dict[str, list[int]]


class _Answer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ClusterRates(_Answer):
    """`GET /v1/cluster/rates`: what `partition_weights: "live"` reads now."""

    bootstrap_servers: str
    sampled_at: float | None
    """Unix time of the newest sample; null before the first."""
    window_s: float
    """the span the rates cover (grows to STICKYD_WATCH_WINDOW_S after start)."""
    topics: dict[str, list[int | None]]
    """topic -> records/s per partition; null where a partition has no rate yet."""
    topic_ids: dict[str, str]
    """topic id -> topic name (the KIP-848 plug-in names topics by id)."""


class ClusterMember(_Answer):
    member_id: str
    client_id: str
    host: str
    subscription: list[str]
    assignment: Partitions
    target: Partitions | None = None
    """KIP-848 groups: the assignment the coordinator is moving the member to."""
    generation: int | None = None
    rack: str | None = None
    instance_id: str | None = None


class ClusterGroup(_Answer):
    group_id: str
    protocol: str
    """`classic` or `consumer` (KIP-848)."""
    state: str
    assignor: str
    epoch: int | None = None
    members: list[ClusterMember]
    lag: dict[str, list[int | None]]
    """topic -> per partition: end offset minus committed offset (null: the group never committed there)."""
    total_lag: int
    rates: dict[str, list[int | None]]
    """topic -> records/s per partition, as the watcher measured them (null: no rate yet)."""
    total_rate: int
    """records/s into every partition of the topics the group reads."""


class ClusterGroups(_Answer):
    """`GET /v1/cluster/groups`: the watched cluster's consumer groups as their coordinators report them."""

    bootstrap_servers: str
    groups: list[ClusterGroup]
    skipped: list[str]
    """groups not shown, each with the reason (no members, another group type, an error)."""
