"""Consumer-group assignment: the request of docs/wire-format.md (consumer assignment) as frozen pydantic models."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SkipValidation,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from stickyd.models.consumer.owned import OwnedColumns, OwnedMap, TopicName, owned_columns
from stickyd.models.consumer.subscription_ids import SubscriptionIds
from stickyd.models.consumer.weights import MAX_CAPACITY, PartitionWeights, check_partition_weights
from stickyd.models.fallback_cause import FallbackCause
from stickyd.models.int_ranges import Int32

MemberId = Annotated[str, Field(min_length=1)]

OWNED_COLUMNS_GIVEN = "owned_columns"
"""validation-context key: the members' claim columns, already checked (models/consumer/wire.py)."""
SUBSCRIPTIONS_FROM_TOPICS = "subscriptions_from_topics"
"""validation-context key: every member's `topics` were looked up by index in the request's own
`topics` (models/consumer/compact.py), whose names are checked there: a member's list is not
checked again, name by name (1M names at 2,000 members x 500 topics)."""
SUBSCRIPTION_IDS_GIVEN = "subscription_ids"
"""validation-context key: the members' subscriptions as topic numbers, members in request order
(models/consumer/subscription_ids.py), as a compact body gives them."""

ConsumerStrategy = Literal["optimal", "sticky", "range", "roundrobin", "lag-greedy"]
Protocol = Literal["eager", "cooperative"]
Balance = Literal["count", "per_topic", "load"]
"""what `optimal` balances: partition counts, each topic's spread, or weight per capacity
(docs/wire-format.md, "What balanced means")."""

TopicPartitions = dict[str, list[int]]
"""topic -> sorted partition numbers."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class ConsumerMember(_Frozen):
    """One group member's JoinGroup subscription, with its KIP-341 claims."""

    id: MemberId
    topics: list[TopicName]
    owned: SkipValidation[OwnedMap] = Field(default_factory=dict)
    """checked (as `OwnedMap`) by ConsumerProblem for all members at once: models/consumer/owned.py."""
    generation: Annotated[Int32, Field(ge=-1)] = -1
    rack: Annotated[str, Field(min_length=1)] | None = None
    capacity: Annotated[int, Field(ge=1, le=MAX_CAPACITY)] | None = None
    """what the member can take relative to the others (threads, cores); 1 when absent."""

    @field_validator("topics", mode="wrap")
    @classmethod
    def _names_checked_once(cls, value: object, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> object:
        # a compact body's subscriptions are names from the topics table, each checked there once
        if type(value) is list and isinstance(info.context, dict) and info.context.get(SUBSCRIPTIONS_FROM_TOPICS):
            return value
        return handler(value)


class ConsumerOptions(_Frozen):
    strategy: ConsumerStrategy = "optimal"
    time_limit_ms: Annotated[int, Field(gt=0, le=3_600_000)] | None = None
    protocol: Protocol = "eager"
    max_imbalance: Annotated[Int32, Field(ge=0)] = 0
    balance: Balance = "count"
    load_tolerance: Annotated[float, Field(ge=0, le=1)] = 0.05
    """how far above the best bottleneck (balance `load`) the answer may stay to move less."""


class ConsumerProblem(_Frozen):
    """A rebalance: partitions per topic, the members' subscriptions and what they own."""

    topics: dict[TopicName, Annotated[Int32, Field(ge=0)]]
    members: Annotated[list[ConsumerMember], Field(min_length=1)]
    options: ConsumerOptions = Field(default_factory=ConsumerOptions)
    copartitioned: list[Annotated[list[TopicName], Field(min_length=1)]] = Field(default_factory=list)
    partition_racks: dict[TopicName, list[list[Annotated[str, Field(min_length=1)]]]] = Field(default_factory=dict)
    partition_weights: SkipValidation[PartitionWeights] | None = None
    """checked by `check_partition_weights` (models/consumer/weights.py), naming the field."""
    _owned_columns: OwnedColumns | None = PrivateAttr(default=None)
    _subscription_ids: SubscriptionIds | None = PrivateAttr(default=None)

    @property
    def owned_columns(self) -> OwnedColumns | None:
        """every member's claims as columns (members in request order; topics by position in
        `sorted(topics)`), made while validating; None for a model made without validation."""
        return self._owned_columns

    @property
    def subscription_ids(self) -> SubscriptionIds | None:
        """every member's topics as numbers (members in request order; topics by position in
        `sorted(topics)`), when the body gave them so (a compact body); they name existing topics
        only."""
        return self._subscription_ids

    @model_validator(mode="after")
    def _check_cross_fields(self, info: ValidationInfo) -> ConsumerProblem:
        # claim columns the caller already made from the request's bytes (models/consumer/wire.py)
        given = info.context.get(OWNED_COLUMNS_GIVEN) if isinstance(info.context, dict) else None
        if isinstance(given, OwnedColumns):
            self._owned_columns = given
        else:
            position = {t: i for i, t in enumerate(sorted(self.topics))}
            self._owned_columns = owned_columns([m.owned for m in self.members], position)
        numbered = info.context.get(SUBSCRIPTION_IDS_GIVEN) if isinstance(info.context, dict) else None
        if isinstance(numbered, SubscriptionIds) and len(numbered.which) == len(self.members):
            self._subscription_ids = numbered
        seen: dict[str, int] = {}
        for i, member in enumerate(self.members):
            if member.id in seen:
                raise ValueError(
                    f"members[{i}].id: duplicate member id {member.id!r} (also members[{seen[member.id]}])"
                )
            seen[member.id] = i
        grouped: dict[str, int] = {}
        for g, group in enumerate(self.copartitioned):
            for j, topic in enumerate(group):
                where = f"copartitioned[{g}][{j}]"
                if topic not in self.topics:
                    raise ValueError(f"{where}: unknown topic {topic!r} (not in topics)")
                if topic in grouped:
                    other = grouped[topic]
                    detail = "twice in this group" if other == g else f"also in copartitioned[{other}]"
                    raise ValueError(f"{where}: topic {topic!r} is {detail}")
                grouped[topic] = g
        for topic, racks in self.partition_racks.items():
            where = f"partition_racks.{topic}"
            if topic not in self.topics:
                raise ValueError(f"{where}: unknown topic {topic!r} (not in topics)")
            if len(racks) != self.topics[topic]:
                raise ValueError(
                    f"{where}: {len(racks)} rack lists, but {topic} has "
                    f"{self.topics[topic]} partitions (one list per partition)"
                )
        check_partition_weights(self.partition_weights, self.topics)
        return self


class LoadStats(_Frozen):
    """An answer's normalized loads (weight / capacity) and the proven bounds beside them."""

    max: float
    min: float
    lower_bound: float | None = Field(default=None, exclude_if=lambda value: value is None)
    """a proven lower bound on the best possible bottleneck L*."""
    moves_lower_bound: int | None = Field(default=None, exclude_if=lambda value: value is None)
    """a proven lower bound on the moves of an answer within (1 + load_tolerance) x L*."""


class ConsumerStats(_Frozen):
    strategy: ConsumerStrategy
    solver: str
    optimal: bool
    fallback: bool
    moves: int
    kept: int
    owned: int
    min_load: int
    max_load: int
    time_ms: float
    warnings: list[str] = Field(default_factory=list)
    load: LoadStats | None = Field(default=None, exclude_if=lambda value: value is None)
    """balance `load` only: the answer's normalized loads and what is proven about them."""
    _fallback_cause: FallbackCause | None = PrivateAttr(default=None)

    @property
    def fallback_cause(self) -> FallbackCause | None:
        """Why the fallback answered (None when it did not): the service's metrics label, not on the wire."""
        return self._fallback_cause


class ConsumerSolution(_Frozen):
    """The answer: who consumes what now, and (cooperative) what must be revoked first."""

    assignment: dict[str, TopicPartitions]
    revoke: dict[str, TopicPartitions] = Field(default_factory=dict)
    target: dict[str, TopicPartitions] | None = None
    unassigned: TopicPartitions = Field(default_factory=dict)
    stats: ConsumerStats
