"""One fleet row in, one result record out: the pipeline's unit of work, free of Spark.

A fleet snapshot row is `{"group_id": ..., "kind": "consumer" | "streams", "problem": {...}}`
(the problem in the contract's format, as an object or a JSON string). Executors
(`mapInPandas`) and the driver (`--service`) both turn rows into the same `Result` records, so
the two modes can only differ in who solved.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from stickyd.models import ConsumerProblem, ConsumerSolution, ProblemError, parse
from stickyd.models.streams.problem import StreamsProblem, StreamsSolution
from stickyd.pipeline.bottleneck import bottleneck_before
from stickyd.pipeline.explain import consumer_limit, streams_limit

Kind = Literal["consumer", "streams"]
Shape = Callable[[str, dict[str, Any]], dict[str, Any]]
KINDS: tuple[Kind, ...] = ("consumer", "streams")

RESULT_SCHEMA = (
    "row long, group_id string, kind string, ok boolean, error_field string, error_reason string, raw string, "
    "strategy string, solver string, optimal boolean, fallback boolean, moves long, standby_moves long, "
    "owned long, members long, partitions long, min_load long, max_load long, balance long, time_ms double, "
    "warnings string, limited_by string, load_before double, load_after double, load_lower_bound double, "
    "assignment array<struct<member:string,topic:string,partition:long,role:string>>"
)
"""Spark DDL of a `Result`, one per fleet row."""

ASSIGNMENT_COLUMNS = ("member", "topic", "partition", "role")
"""Streams tasks are written with `topic` = subtopology and `partition` = the task's partition."""


@dataclass(frozen=True)
class FleetRow:
    """A row that parsed: what to solve for which group."""

    row: int
    group_id: str
    kind: Kind
    problem: ConsumerProblem | StreamsProblem


@dataclass
class Result:
    """The outcome for one fleet row: stats and assignment rows, or the reason it was rejected."""

    row: int
    group_id: str | None
    kind: str | None
    ok: bool
    error_field: str | None = None
    error_reason: str | None = None
    raw: str | None = None
    strategy: str | None = None
    solver: str | None = None
    optimal: bool | None = None
    fallback: bool | None = None
    moves: int | None = None
    standby_moves: int | None = None
    owned: int | None = None
    members: int | None = None
    partitions: int | None = None
    min_load: int | None = None
    max_load: int | None = None
    balance: int | None = None
    time_ms: float | None = None
    warnings: str | None = None
    limited_by: str | None = None
    """What keeps the group from a proven, balanced optimum, in words (`stickyd.pipeline.explain`); empty if nothing."""
    load_before: float | None = None
    """balance `load`: the largest normalized load of what the members owned before (`stickyd.pipeline.bottleneck`)."""
    load_after: float | None = None
    """balance `load`: the answer's (`stats.load.max`)."""
    load_lower_bound: float | None = None
    """balance `load`: a proven lower bound on the best bottleneck (`stats.load.lower_bound`)."""
    assignment: list[dict[str, Any]] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return asdict(self)


class RowError(ValueError):
    """A fleet row that cannot be solved; `field` is the path inside the row."""

    def __init__(self, row: int, group_id: str | None, kind: str | None, field: str, reason: str, raw: str) -> None:
        super().__init__(f"row {row} (group {group_id or '?'}): {field}: {reason}")
        self.row, self.group_id, self.kind, self.field, self.reason, self.raw = row, group_id, kind, field, reason, raw

    def result(self) -> Result:
        return Result(
            self.row, self.group_id, self.kind, False, error_field=self.field, error_reason=self.reason, raw=self.raw
        )


def parse_row(row: int, raw: str, time_limit_ms: int | None = None, shape: Shape | None = None) -> FleetRow:
    """Check one JSON line of a fleet snapshot; raises RowError naming the field.

    `time_limit_ms` fills `options.time_limit_ms` where the problem sets none, so the
    in-process and `--service` modes solve under the same limit. `shape` (group_id, problem) ->
    problem sets what a plan asks of every consumer group (`stickyd.pipeline.load_plan`).
    """
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as error:
        raise RowError(row, None, None, "row", f"not valid JSON ({error.msg} at column {error.colno})", raw) from None
    if not isinstance(data, dict):
        raise RowError(row, None, None, "row", f"expected a JSON object, got {type(data).__name__}", raw)
    group_id = data.get("group_id")
    kind = data.get("kind")
    named = group_id if isinstance(group_id, str) and group_id else None
    if named is None:
        raise RowError(row, None, _text(kind), "group_id", "required: a non-empty string", raw)
    if kind not in KINDS:
        raise RowError(row, named, _text(kind), "kind", f"must be 'consumer' or 'streams', got {kind!r}", raw)
    if unknown := sorted(set(data) - {"group_id", "kind", "problem"}):
        raise RowError(row, named, kind, unknown[0], "unknown field (a row has group_id, kind, problem)", raw)
    problem = data.get("problem")
    if isinstance(problem, str):
        try:
            problem = json.loads(problem)
        except json.JSONDecodeError as error:
            raise RowError(row, named, kind, "problem", f"not valid JSON ({error.msg})", raw) from None
    if not isinstance(problem, dict):
        raise RowError(row, named, kind, "problem", "required: the problem in the contract's format", raw)
    if time_limit_ms is not None:
        options = problem.get("options")
        if isinstance(options, dict) and "time_limit_ms" not in options:
            problem = {**problem, "options": {**options, "time_limit_ms": time_limit_ms}}
        elif options is None:
            problem = {**problem, "options": {"time_limit_ms": time_limit_ms}}
    if shape is not None and kind == "consumer":
        problem = shape(named, problem)
    try:
        parsed: ConsumerProblem | StreamsProblem = (
            parse(ConsumerProblem, problem) if kind == "consumer" else parse(StreamsProblem, problem)
        )
    except ProblemError as error:
        raise RowError(row, named, kind, f"problem.{error.field}", error.reason, raw) from None
    return FleetRow(row, named, kind, parsed)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def consumer_result(fleet_row: FleetRow, solution: ConsumerSolution) -> Result:
    """Stats and assignment rows of a consumer group (the target, in the cooperative protocol)."""
    s = solution.stats
    problem = fleet_row.problem
    assert isinstance(problem, ConsumerProblem)
    final = solution.target if solution.target is not None else solution.assignment
    before, after, bound = _load_figures(problem, solution)
    rows = [
        {"member": member, "topic": topic, "partition": p, "role": "active"}
        for member, topics in final.items()
        for topic, parts in topics.items()
        for p in parts
    ]
    rows += [
        {"member": member, "topic": topic, "partition": p, "role": "revoke"}
        for member, topics in solution.revoke.items()
        for topic, parts in topics.items()
        for p in parts
    ]
    return Result(
        fleet_row.row, fleet_row.group_id, "consumer", True,
        strategy=s.strategy, solver=s.solver, optimal=s.optimal, fallback=s.fallback,
        moves=s.moves, standby_moves=0, owned=s.owned, members=len(problem.members),
        partitions=sum(problem.topics.values()), min_load=s.min_load, max_load=s.max_load,
        balance=s.max_load - s.min_load, time_ms=s.time_ms, warnings="; ".join(s.warnings),
        limited_by=consumer_limit(problem, solution), assignment=rows,
        load_before=before, load_after=after, load_lower_bound=bound,
    )  # fmt: skip


def _load_figures(problem: ConsumerProblem, solution: ConsumerSolution) -> tuple[float | None, ...]:
    """Balance `load`: the bottleneck before and after, and the proven bound on the best one."""
    load = solution.stats.load
    if load is None:
        return None, None, None
    return bottleneck_before(problem), load.max, load.lower_bound


def streams_result(fleet_row: FleetRow, solution: StreamsSolution) -> Result:
    """Stats and task rows of a Streams app: target actives and standbys, and running warm-ups."""
    s = solution.stats
    problem = fleet_row.problem
    assert isinstance(problem, StreamsProblem)
    rows: list[dict[str, Any]] = []
    for client, target in solution.target.items():
        for role, tasks in (("active", target.active), ("standby", target.standby)):
            rows += [_task_row(client, task, role) for task in tasks]
        rows += [_task_row(client, task, "warmup") for task in solution.assignment[client].warmup]
    loads = s.balance.active
    return Result(
        fleet_row.row, fleet_row.group_id, "streams", True,
        strategy=s.strategy, solver=s.solver, optimal=s.optimal, fallback=s.fallback,
        moves=s.active_moves, standby_moves=s.standby_moves,
        owned=sum(len(c.active) for c in problem.clients), members=len(problem.clients),
        partitions=sum(t.partitions for t in problem.subtopologies),
        min_load=min(loads, default=0), max_load=max(loads, default=0),
        balance=max(loads, default=0) - min(loads, default=0), time_ms=s.time_ms,
        warnings="; ".join(s.warnings), limited_by=streams_limit(problem, solution), assignment=rows,
    )  # fmt: skip


def _task_row(client: str, task: str, role: str) -> dict[str, Any]:
    subtopology, _, partition = task.rpartition("_")
    return {"member": client, "topic": subtopology, "partition": int(partition), "role": role}
