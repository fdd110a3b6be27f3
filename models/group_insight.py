"""Looking into a stored group without changing it: its timeline of generations, a "what if"
rebalance, and why a partition (or Streams task) is where it is. Request and response bodies."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt

from stickyd.models.groups import MemberId, TimelineEntry

TopicName = Annotated[str, Field(min_length=1)]


class GroupTimeline(BaseModel):
    """`GET /v1/groups/{group_id}/timeline`: retained generations, oldest first."""

    group_id: str
    kind: Literal["consumer", "streams"]
    generations: list[TimelineEntry]


class NewMember(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: MemberId
    topics: list[TopicName] | None = None
    """its subscription; left out: every topic the group has (a Streams client takes none: it
    runs every subtopology)."""
    rack: Annotated[str, Field(min_length=1)] | None = None


class WhatIfRequest(BaseModel):
    """`POST /v1/groups/{group_id}/what-if`: changes to try on a group's current generation.
    Nothing is stored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    remove: list[MemberId] = Field(default_factory=list)
    """members that leave."""
    add: list[NewMember] = Field(default_factory=list)
    """members that join."""
    add_partitions: dict[TopicName, Annotated[StrictInt, Field(ge=1, le=1_000_000)]] = Field(default_factory=dict)
    """partitions added to a topic of the group (Streams: to a subtopology, one task each)."""
    strategy: Literal["optimal", "sticky", "range", "roundrobin", "greedy"] | None = None
    """left out: the strategy of the group's last rebalance. A consumer group takes optimal,
    sticky, range or roundrobin; a Streams application optimal, sticky or greedy."""
    time_limit_ms: Annotated[StrictInt, Field(gt=0, le=60_000)] | None = None


class Figures(BaseModel):
    """An assignment in figures: what the operator compares (Streams: in active tasks)."""

    partitions: int
    members: int
    """members that take partitions (members marked leaving aside)."""
    min_load: int
    max_load: int
    """the fewest and most partitions of those members."""
    moves: int
    """partitions of the current assignment whose owner changes, a removed member's included (0 for
    the current one)."""


class MemberChange(BaseModel):
    id: str
    now: int
    """partitions it owns now (0: a member that joins)."""
    then: int
    """partitions the answer gives it (0: a member that leaves)."""
    gained: int
    lost: int


class WhatIfResponse(BaseModel):
    group_id: str
    kind: Literal["consumer", "streams"]
    generation: int
    """the stored generation the changes were tried on (unchanged)."""
    strategy: str
    current: Figures
    proposed: Figures
    solver: str
    optimal: bool
    fallback: bool
    time_ms: float
    warnings: list[str]
    members: list[MemberChange]
    """every member of either side, the ones whose load changes most first."""


Reason = Literal["assigned", "new", "kept", "owner-left", "owner-unsubscribed", "balance", "held", "unassigned"]


class OwnerStep(BaseModel):
    """Where the partition was after one retained generation, and why."""

    generation: int
    created_at: float
    owner: str | None
    """None: nobody owned it (not yet there, or unassigned)."""
    previous: str | None
    reason: Reason
    words: str


class Explanation(BaseModel):
    """`GET /v1/groups/{group_id}/explain`: one partition's (or Streams task's) owners over the
    retained generations, oldest first, and why it is where it is now."""

    group_id: str
    kind: Literal["consumer", "streams"]
    topic: str
    """a topic (consumer), or a subtopology id (Streams)."""
    partition: int
    item: str
    """`orders-7`, or the Streams task `0_7`."""
    owner: str | None
    summary: str
    rack: str | None = None
    """what racks say about the current owner, when the group's partitions have racks."""
    steps: list[OwnerStep]
