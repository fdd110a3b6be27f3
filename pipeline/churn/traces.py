"""Churn traces: a group's starting membership and the events that change it, as data."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from stickyd.models import ConsumerMember

EventType = Literal["join", "leave", "crash", "scale_out", "partitions_added"]
EVENT_TYPES: tuple[str, ...] = ("join", "leave", "crash", "scale_out", "partitions_added")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class NewMember(_Frozen):
    id: Annotated[str, Field(min_length=1)]
    topics: list[Annotated[str, Field(min_length=1)]]


class ChurnEvent(_Frozen):
    """`join`/`scale_out` add `members`; `leave`/`crash` remove `member_ids`; `partitions_added` grows `topics`.

    A leave (LeaveGroup) and a crash (session timeout) end in the same rebalance; they are kept
    apart so the report can count them apart.
    """

    type: EventType
    members: list[NewMember] = Field(default_factory=list)
    member_ids: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    topics: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _payload_fits_type(self) -> ChurnEvent:
        needs = {"join": "members", "scale_out": "members", "leave": "member_ids", "crash": "member_ids"}
        field = needs.get(self.type, "topics")
        if not getattr(self, field):
            raise ValueError(f"{field}: a {self.type} event needs at least one")
        return self


class ChurnTrace(_Frozen):
    trace_id: Annotated[str, Field(min_length=1)]
    topics: dict[str, Annotated[int, Field(ge=0)]]
    members: Annotated[list[NewMember], Field(min_length=1)]
    copartitioned: list[list[str]] = Field(default_factory=list)
    events: list[ChurnEvent]

    @model_validator(mode="after")
    def _events_follow_membership(self) -> ChurnTrace:
        present = {m.id for m in self.members}
        topics = dict(self.topics)
        for i, event in enumerate(self.events):
            for j, member in enumerate(event.members):
                if member.id in present:
                    raise ValueError(f"events[{i}].members[{j}].id: {member.id!r} is already in the group")
                present.add(member.id)
            for j, member_id in enumerate(event.member_ids):
                if member_id not in present:
                    raise ValueError(f"events[{i}].member_ids[{j}]: {member_id!r} is not in the group")
                present.discard(member_id)
            if not present:
                raise ValueError(f"events[{i}]: the group would have no members left")
            for topic, count in event.topics.items():
                if topic not in topics:
                    raise ValueError(f"events[{i}].topics.{topic}: unknown topic")
                if count < topics[topic]:
                    shrink = f"{topics[topic]} -> {count}"
                    raise ValueError(f"events[{i}].topics.{topic}: Kafka never removes partitions ({shrink})")
                topics[topic] = count
        return self


def apply_event(
    members: list[ConsumerMember], topics: dict[str, int], event: ChurnEvent
) -> tuple[list[ConsumerMember], dict[str, int]]:
    """The membership and partition counts after `event` (claims are filled in by the replay)."""
    gone = set(event.member_ids)
    after = [m for m in members if m.id not in gone]
    after += [ConsumerMember(id=m.id, topics=list(m.topics)) for m in event.members]
    return after, {**topics, **event.topics}
