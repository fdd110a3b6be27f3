"""Replaying one churn trace with every strategy, each event's answer feeding the next event."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import ValidationError

from stickyd.models import ConsumerMember, ConsumerProblem
from stickyd.models.errors import first_problem
from stickyd.pipeline.churn.traces import ChurnEvent, ChurnTrace, apply_event
from stickyd.solvers import solve_consumer
from stickyd.solvers.time_policy import DEFAULT_TIME_LIMIT_MS

STRATEGIES = ("optimal", "sticky", "range", "roundrobin", "cooperative")
"""`cooperative` is the optimal target handed over with KIP-429's two rounds."""

REPLAY_SCHEMA = (
    "row long, trace_id string, ok boolean, error_field string, error_reason string, raw string, "
    "strategy string, step long, event string, members long, partitions long, moves long, revoked long, "
    "balance long, time_ms double"
)


@dataclass
class Step:
    """One rebalance of a replay. `revoked`: partitions their owners stop consuming for it.

    Eager strategies revoke everything their surviving members owned; the cooperative
    protocol revokes only what changes owner.
    """

    row: int
    trace_id: str | None
    ok: bool
    error_field: str | None = None
    error_reason: str | None = None
    raw: str | None = None
    strategy: str | None = None
    step: int | None = None
    event: str | None = None
    members: int | None = None
    partitions: int | None = None
    moves: int | None = None
    revoked: int | None = None
    balance: int | None = None
    time_ms: float | None = None


STEP_FIELDS = tuple(Step.__dataclass_fields__)


def parse_trace(row: int, raw: str) -> ChurnTrace | Step:
    """A trace, or the error step that reports why the row was rejected."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as error:
        return Step(row, None, False, "row", f"not valid JSON ({error.msg} at column {error.colno})", raw)
    trace_id = data.get("trace_id") if isinstance(data, dict) else None
    try:
        return ChurnTrace.model_validate(data)
    except ValidationError as error:
        problem = first_problem(error)
        name = trace_id if isinstance(trace_id, str) else None
        return Step(row, name, False, problem.field, problem.reason, raw)


def replay_trace(
    trace: ChurnTrace,
    row: int = 0,
    strategies: tuple[str, ...] = STRATEGIES,
    time_limit_ms: int = DEFAULT_TIME_LIMIT_MS,
) -> list[Step]:
    """Step 0 is the group's first assignment; then one step per event."""
    steps: list[Step] = []
    events: list[ChurnEvent | None] = [None, *trace.events]
    for strategy in strategies:
        members = [ConsumerMember(id=m.id, topics=list(m.topics)) for m in trace.members]
        topics = dict(trace.topics)
        owned: dict[str, dict[str, list[int]]] = {}
        for step, event in enumerate(events):
            if event is not None:
                members, topics = apply_event(members, topics, event)
            problem = _problem(trace, members, topics, owned, step, strategy, time_limit_ms)
            solution = solve_consumer(problem)
            final = solution.target if solution.target is not None else solution.assignment
            stats = solution.stats
            revoked = sum(len(p) for t in solution.revoke.values() for p in t.values())
            steps.append(
                Step(
                    row,
                    trace.trace_id,
                    True,
                    strategy=strategy,
                    step=step,
                    event="initial" if event is None else event.type,
                    members=len(members),
                    partitions=sum(topics.values()),
                    moves=stats.moves,
                    revoked=revoked if strategy == "cooperative" else stats.owned,
                    balance=stats.max_load - stats.min_load,
                    time_ms=stats.time_ms,
                )  # fmt: skip
            )
            owned = final
    return steps


def _problem(
    trace: ChurnTrace,
    members: list[ConsumerMember],
    topics: dict[str, int],
    owned: dict[str, dict[str, list[int]]],
    generation: int,
    strategy: str,
    time_limit_ms: int,
) -> ConsumerProblem:
    # each member claims what the previous step gave it, at that step's generation (KIP-341)
    claims = {m: {"owned": parts, "generation": generation - 1} for m, parts in owned.items()}
    claimed = [{"id": m.id, "topics": m.topics} | claims.get(m.id, {}) for m in members]
    options: dict[str, Any] = {"strategy": "optimal" if strategy == "cooperative" else strategy}
    options |= {"time_limit_ms": time_limit_ms, "protocol": "cooperative" if strategy == "cooperative" else "eager"}
    return ConsumerProblem.model_validate(
        {
            "topics": topics,
            "members": claimed,
            "copartitioned": trace.copartitioned,
            "options": options,
        }
    )


def replay_line(row: int, raw: str, strategies: tuple[str, ...], time_limit_ms: int) -> list[dict[str, Any]]:
    parsed = parse_trace(row, raw)
    if isinstance(parsed, Step):
        return [asdict(parsed)]
    try:
        return [asdict(s) for s in replay_trace(parsed, row, strategies, time_limit_ms)]
    except ValueError as error:  # e.g. the trace's problem does not fit the contract
        return [asdict(Step(row, parsed.trace_id, False, "trace", str(error), raw))]
