"""Kafka Streams task assignment: the request of docs/wire-format.md (Streams assignment) as frozen pydantic models."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from stickyd.models.fallback_cause import FallbackCause
from stickyd.models.int_ranges import INT32_MAX, Int32, Int64

TASK_NAME = re.compile(r"^(.+)_(0|[1-9][0-9]*)$")
"""`<subtopology>_<partition>`, as Kafka names tasks (the last underscore splits)."""

INT32_DIGITS = len(str(INT32_MAX))
StreamsStrategy = Literal["optimal", "greedy", "sticky"]
Stickiness = Literal["tasks", "restore_cost"]
MAX_TASK_COST = 10**15
"""The largest restore cost of one task (docs/wire-format.md, restore costs)."""
TaskCost = Annotated[int, Field(ge=0, le=MAX_TASK_COST)]
Id = Annotated[str, Field(min_length=1)]


def parse_task(name: str) -> tuple[str, int] | None:
    """(subtopology, partition), or None when `name` is not a task name with an int32 partition
    (TASK_NAME's shape, checked without a regular expression: a request names up to millions)."""
    sub, _, digits = name.rpartition("_")
    if not sub or "\n" in sub or not (digits.isascii() and digits.isdigit()) or len(digits) > INT32_DIGITS:
        return None
    if digits[0] == "0" and len(digits) > 1:
        return None
    partition = int(digits)
    return (sub, partition) if partition <= INT32_MAX else None


TASK_NAME_LINES = re.compile(r"(?:[^\n]+_(?:0|[1-9][0-9]{0,8})\n)*")
"""task names, one per line, each with a partition of at most 9 digits (so within int32)."""


def _all_task_names(names: Collection[str]) -> bool:
    """True when every name is surely a task name (one regular expression over all of them); False
    when one may not be: then `parse_task` decides name by name, and names the wrong one (a name
    with a line break, or with a 10-digit partition, is always left to it)."""
    if not names:
        return True
    lines = "\n".join(names) + "\n"
    return lines.count("\n") == len(names) and TASK_NAME_LINES.fullmatch(lines) is not None


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class Subtopology(_Frozen):
    id: Id
    partitions: Annotated[Int32, Field(ge=0)]
    stateful: bool = True


class StreamsClient(_Frozen):
    """One Streams instance: its threads (capacity) and what it ran in the previous round."""

    id: Id
    capacity: Annotated[Int32, Field(ge=1)] = 1
    rack: Id | None = None
    active: list[str] = Field(default_factory=list)
    standby: list[str] = Field(default_factory=list)
    lags: dict[str, Annotated[Int64, Field(ge=0)]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _task_names(self) -> StreamsClient:
        if all(_all_task_names(names) for names in (self.active, self.standby, self.lags.keys())):
            return self
        for field in ("active", "standby"):
            for i, name in enumerate(getattr(self, field)):
                if parse_task(name) is None:
                    raise ValueError(
                        f"{field}[{i}]: task name {name!r} is not <subtopology>_<partition> (partition 0..2147483647)"
                    )
        for name in self.lags:
            if parse_task(name) is None:
                raise ValueError(
                    f"lags.{name}: task name {name!r} is not <subtopology>_<partition> (partition 0..2147483647)"
                )
        return self


class StreamsConfig(_Frozen):
    num_standby_replicas: Annotated[Int32, Field(ge=0)] = 0
    max_warmup_replicas: Annotated[Int32, Field(ge=0)] = 2
    acceptable_recovery_lag: Annotated[Int64, Field(ge=0)] = 10_000


class StreamsOptions(_Frozen):
    strategy: StreamsStrategy = "optimal"
    time_limit_ms: Annotated[int, Field(gt=0, le=3_600_000)] | None = None
    stickiness: Stickiness = "tasks"
    """`tasks`: the stickiness levels count moved tasks; `restore_cost`: they sum the moved
    tasks' `task_costs` (what restoring their state costs the new owner)."""


class StreamsProblem(_Frozen):
    subtopologies: list[Subtopology]
    clients: Annotated[list[StreamsClient], Field(min_length=1)]
    config: StreamsConfig = Field(default_factory=StreamsConfig)
    options: StreamsOptions = Field(default_factory=StreamsOptions)
    task_costs: dict[str, TaskCost] = Field(default_factory=dict)
    """task name -> what moving it costs (its state's restore, e.g. the changelog's size); 1
    for a task without an entry. Weighs the moves only with `options.stickiness: restore_cost`."""

    @model_validator(mode="after")
    def _unique_ids(self) -> StreamsProblem:
        if not _all_task_names(self.task_costs.keys()):
            for name in self.task_costs:
                if parse_task(name) is None:
                    raise ValueError(
                        f"task_costs.{name}: task name {name!r} is not <subtopology>_<partition> "
                        "(partition 0..2147483647)"
                    )
        lists = (("subtopologies", [s.id for s in self.subtopologies]), ("clients", [c.id for c in self.clients]))
        for field, ids in lists:
            seen: dict[str, int] = {}
            for i, item_id in enumerate(ids):
                if item_id in seen:
                    raise ValueError(f"{field}[{i}].id: duplicate id {item_id!r} (also {field}[{seen[item_id]}])")
                seen[item_id] = i
        return self


class ClientAssignment(_Frozen):
    active: list[str]
    standby: list[str]
    warmup: list[str] = Field(default_factory=list)


class TargetAssignment(_Frozen):
    active: list[str]
    standby: list[str]


class StreamsBalance(_Frozen):
    active: list[int]
    stateful: list[int]
    subtopology_spread: int


class StreamsStats(_Frozen):
    strategy: StreamsStrategy
    solver: str
    optimal: bool
    fallback: bool
    active_moves: int
    standby_moves: int
    active_move_cost: int | None = None
    """with `stickiness: restore_cost`: the summed task_costs of the stateful actives that move."""
    standby_move_cost: int | None = None
    """with `stickiness: restore_cost`: the summed task_costs of the standby replicas that move."""
    warmups: int
    balance: StreamsBalance
    time_ms: float
    warnings: list[str] = Field(default_factory=list)
    _fallback_cause: FallbackCause | None = PrivateAttr(default=None)

    @model_serializer(mode="wrap")
    def _without_absent_costs(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The restore-cost figures appear only where they were asked for."""
        out: dict[str, Any] = handler(self)
        for name in ("active_move_cost", "standby_move_cost"):
            if out.get(name, 0) is None:
                del out[name]
        return out

    @property
    def fallback_cause(self) -> FallbackCause | None:
        """Why the fallback answered (None when it did not): the service's metrics label, not on the wire."""
        return self._fallback_cause


class StreamsSolution(_Frozen):
    assignment: dict[str, ClientAssignment]
    target: dict[str, TargetAssignment]
    followup_rebalance: bool
    stats: StreamsStats
