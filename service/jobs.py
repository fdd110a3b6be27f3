"""What a solver process runs for one request: bytes in, status and JSON bytes out.

Parsing, validation and solving all happen here, off the event loop; the web process only
moves bytes and keeps time.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Any, Literal

from models import ConsumerProblem, ConsumerSolution, ProblemError, parse
from models.streams import StreamsProblem, StreamsSolution
from service.json_guard import load_object
from solvers import solve_consumer, solve_streams

log = logging.getLogger(__name__)

Kind = Literal["consumer", "streams"]


@dataclass(frozen=True)
class Limits:
    max_partitions: int
    max_members: int
    default_time_limit_ms: int
    max_time_limit_ms: int


@dataclass(frozen=True)
class JobResult:
    status: int
    body: bytes
    strategy: str = "-"
    solver: str = "-"
    optimal: bool = False
    fallback: bool = False
    solve_ms: float = 0.0
    partitions: int = 0
    members: int = 0


def error(status: int, field: str, reason: str, partitions: int = 0, members: int = 0) -> JobResult:
    detail = f"{field}: {reason}" if field else reason
    body = json.dumps({"detail": detail, "field": field, "reason": reason}).encode()
    return JobResult(status=status, body=body, partitions=partitions, members=members)


def run_job(kind: Kind, body: bytes, limits: Limits, fallback_reason: str | None = None) -> JobResult:
    """Parse, check limits, solve. Never raises for anything a client can send."""
    try:
        data = load_object(body)
    except ProblemError as problem:
        return error(422, problem.field, problem.reason)
    sizes = _sizes(kind, data)
    units, people = ("topics", "members") if kind == "consumer" else ("subtopologies", "clients")
    noun = "partitions" if kind == "consumer" else "tasks"
    if sizes["partitions"] > limits.max_partitions:
        return error(
            413,
            units,
            f"{sizes['partitions']} {noun} exceed this server's limit of "
            f"{limits.max_partitions} (STICKYD_MAX_PARTITIONS)",
            **sizes,
        )
    if sizes["members"] > limits.max_members:
        return error(
            413,
            people,
            f"{sizes['members']} {people} exceed this server's limit of {limits.max_members} (STICKYD_MAX_MEMBERS)",
            **sizes,
        )
    try:
        return _solve(kind, data, limits, fallback_reason, sizes)
    except ProblemError as problem:
        return error(422, problem.field, problem.reason, partitions=sizes["partitions"], members=sizes["members"])


def _solve(
    kind: Kind, data: dict[str, Any], limits: Limits, fallback_reason: str | None, sizes: dict[str, int]
) -> JobResult:
    started = time.perf_counter()
    problem: ConsumerProblem | StreamsProblem
    problem = parse(ConsumerProblem, data) if kind == "consumer" else parse(StreamsProblem, data)
    asked = problem.options.time_limit_ms or limits.default_time_limit_ms
    capped = min(asked, limits.max_time_limit_ms)
    problem = problem.model_copy(update={"options": problem.options.model_copy(update={"time_limit_ms": capped})})
    solution: ConsumerSolution | StreamsSolution
    if isinstance(problem, ConsumerProblem):
        solution = solve_consumer(problem, fallback_reason=fallback_reason)
    else:
        solution = solve_streams(problem, fallback_reason=fallback_reason)
    stats = solution.stats
    if capped < asked:
        stats.warnings.append(f"time_limit_ms capped to {capped} (STICKYD_MAX_TIME_LIMIT_MS)")
    return JobResult(
        status=200,
        body=solution.model_dump_json().encode(),
        strategy=stats.strategy,
        solver=stats.solver,
        optimal=stats.optimal,
        fallback=stats.fallback,
        solve_ms=(time.perf_counter() - started) * 1000,
        **sizes,
    )


def requested_time_limit_ms(data: Any) -> int | None:
    """The request's options.time_limit_ms when it is a plain positive integer."""
    try:
        value = data["options"]["time_limit_ms"]
    except (KeyError, TypeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _sizes(kind: Kind, data: dict[str, Any]) -> dict[str, int]:
    """Partitions (or tasks) and members (or clients), read without trusting the shape."""
    if kind == "consumer":
        counts = data.get("topics")
        people = data.get("members")
    else:
        subtopologies = data.get("subtopologies")
        listed = subtopologies if isinstance(subtopologies, list) else []
        counts = {str(i): s.get("partitions") for i, s in enumerate(listed) if isinstance(s, dict)}
        people = data.get("clients")
    partitions = 0
    if isinstance(counts, dict):
        partitions = sum(v for v in counts.values() if isinstance(v, int) and v > 0)
    members = len(people) if isinstance(people, list) else 0
    return {"partitions": partitions, "members": members}


def warm_up() -> bool:
    """Import and exercise the solvers once, so the first real request is not slow."""
    solve_consumer({"topics": {"t": 2}, "members": [{"id": "a", "topics": ["t"]}]})
    solve_streams({"subtopologies": [{"id": "0", "partitions": 2}], "clients": [{"id": "a"}, {"id": "b"}]})
    return True
