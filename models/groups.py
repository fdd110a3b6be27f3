"""Groups kept by the service (docs/wire-format.md, group state): request and response bodies."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt

from stickyd.models import ConsumerSolution
from stickyd.models.streams.problem import StreamsSolution

MAX_GRACE_MS = 7 * 86_400_000
MemberId = Annotated[str, Field(min_length=1)]


class RebalanceRequest(BaseModel):
    """`POST /v1/groups/{group_id}/rebalance`."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["consumer", "streams"]
    generation: Annotated[StrictInt, Field(ge=-1)]
    """the last generation the caller saw; -1 for none."""
    problem: dict[str, Any]
    """a consumer or Streams assignment request (docs/wire-format.md); `owned` / `active` /
    `standby` may be left out: then the stored assignment is what each member owns."""
    leaving: list[MemberId] = Field(default_factory=list)
    """members to mark as leaving (planned departure), beside those already marked."""
    grace_ms: Annotated[StrictInt, Field(ge=0, le=MAX_GRACE_MS)] | None = None
    """set the group's lost-member grace (kept for later rounds); default 0."""


class LeaveRequest(BaseModel):
    """`POST /v1/groups/{group_id}/leaving`: mark members as leaving, effective next rebalance."""

    model_config = ConfigDict(extra="forbid")

    members: Annotated[list[MemberId], Field(min_length=1)]


class LeavingMember(BaseModel):
    id: str
    empty: bool
    """true once it owns nothing and has nothing to revoke: safe to stop."""


class HeldMember(BaseModel):
    id: str
    since: float
    until: float
    """epoch seconds: after this its work is reassigned in the next rebalance."""
    assignment: dict[str, Any]
    """what is kept for it (partitions per topic, or active/standby/warmup tasks)."""


class RoundReport(BaseModel):
    newcomers: list[str]
    """members that were not in the last round."""
    returning: list[str]
    """members back within their grace (they get what was held for them)."""
    leaving: list[LeavingMember]
    held: list[HeldMember]
    reassigned: list[str]
    """lost members whose grace ran out this round."""
    departed: list[str]
    """members of the last round that are gone (left as planned, or lost with no grace)."""


class RebalanceResponse(RoundReport):
    group_id: str
    kind: Literal["consumer", "streams"]
    generation: int
    """the new generation: send it with the group's next rebalance."""
    solution: ConsumerSolution | StreamsSolution


class GroupState(BaseModel):
    """`GET /v1/groups/{group_id}`: the group as of its current generation."""

    group_id: str
    kind: Literal["consumer", "streams"]
    generation: int
    grace_ms: int
    created_at: float
    updated_at: float
    members: dict[str, Any]
    """the last round's members: subscriptions, racks and capacities (consumer) or capacity/rack (streams)."""
    assignment: dict[str, Any]
    target: dict[str, Any] | None
    leaving: list[LeavingMember]
    held: list[HeldMember]
    history: int
    """generations retained in the history."""
    topics: dict[str, int] = Field(default_factory=dict)
    """consumer groups: the partition counts of the last round."""
    stats: dict[str, Any] | None = None
    """the last solution's stats."""


class TimelineEntry(BaseModel):
    """One retained generation, in figures (no assignment)."""

    generation: int
    created_at: float
    members: int
    moves: int
    solver: str
    optimal: bool
    fallback: bool
    min_load: int
    max_load: int
    """consumer: partitions per member; Streams: active tasks per client."""
    time_ms: float
    newcomers: list[str]
    departed: list[str]
    leaving: list[str]
    held: list[str]


class GroupSummary(BaseModel):
    group_id: str
    kind: str
    generation: int
    members: int
    leaving: int
    held: int
    updated_at: float
    last_rebalance: TimelineEntry | None = None
    """the newest retained generation in figures (none once the history is gone)."""


class GroupList(BaseModel):
    groups: list[GroupSummary]


class HistoryEntry(BaseModel):
    generation: int
    created_at: float
    members: int
    moves: int
    solver: str
    record: dict[str, Any]
    """the answer of that generation, as it was returned."""


class GroupHistory(BaseModel):
    group_id: str
    generations: list[HistoryEntry]
