"""The watched Kafka cluster as the service reports it (GET /v1/cluster/rates, GET /v1/cluster/groups)."""

from __future__ import annotations

from typing import Literal

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
    partitions: int = 0
    """how many partitions the member owns now (its `assignment`)."""
    load: int = 0
    """records/s into the partitions it owns now, weighed as `partition_weights: "live"` weighs them."""


class Bottleneck(_Answer):
    """The busiest member: by count, the most partitions one member owns; by load, the most records/s."""

    count: int
    load: int


class StickydAnswer(_Answer):
    """stickyd's answer (strategy `optimal`) to the group as it is, with one `balance`; stored nowhere."""

    balance: Literal["count", "load"]
    bottleneck: Bottleneck
    moves: int
    """partitions that would change owner."""
    solver: str
    optimal: bool
    fallback: bool
    time_ms: float
    members: dict[str, Bottleneck]
    """member id -> the partitions and records/s it would own."""


class ClusterComparison(_Answer):
    """How far the group is from what stickyd would give: its bottleneck now beside stickyd's answers."""

    sampled_at: float | None
    """Unix time of the watcher's sample the weights come from."""
    by_count: StickydAnswer | None = None
    by_load: StickydAnswer | None = None
    reason: str | None = None
    """why an answer is missing (no subscribed topic, the solver refused, no solver process free)."""


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
    kind: str = "classic"
    """the group type Kafka reports: `classic` or `consumer` (KIP-848)."""
    generation: int | None = None
    """KIP-848: the group epoch; classic: the highest generation its members' subscriptions name
    (null when none names one)."""
    bottleneck: Bottleneck | None = None
    """the busiest member now."""
    stickyd: ClusterComparison | None = None


class ClusterGroups(_Answer):
    """`GET /v1/cluster/groups`: the watched cluster's consumer groups as their coordinators report them."""

    bootstrap_servers: str
    groups: list[ClusterGroup]
    skipped: list[str]
    """groups not shown, each with the reason (no members, another group type, an error)."""
