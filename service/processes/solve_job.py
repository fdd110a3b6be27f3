"""What a solver process runs for one request: bytes in, status and JSON bytes out.

Parsing, validation and solving all happen here, off the event loop; the web process only
moves bytes and keeps time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from stickyd.models import ConsumerProblem, ConsumerSolution, ProblemError, parse
from stickyd.models.consumer.compact import CompactRequest, decode_compact, is_compact
from stickyd.models.consumer.wire import WireRequest, decode_consumer
from stickyd.models.streams.problem import StreamsProblem, StreamsSolution
from stickyd.service.admission.promise_floor import floor_ms
from stickyd.service.admission.request_cost import compact_request_cost, over_limits, request_cost
from stickyd.service.http.json_guard import load_object_fast
from stickyd.service.processes.job import JobResult, Kind, Limits, error
from stickyd.service.watch.live_weights import fill_live_weights
from stickyd.service.watch.rates import LiveRates
from stickyd.solvers import solve_consumer, solve_streams
from stickyd.solvers.budget import TimeBudget
from stickyd.solvers.collector import collector_paused
from stickyd.solvers.consumer.answer_compact import encode_solution
from stickyd.solvers.consumer.lazy_solution import LazyConsumerSolution
from stickyd.solvers.streams.result import streams_answer_json

log = logging.getLogger(__name__)

COLUMN_DECODE_MIN_BYTES = 150_000
"""consumer bodies from this size are decoded with their claims as columns (models/consumer/wire.py):
below it the numpy steps' fixed cost outweighs what they save (measured job times, columns against
the exact path: 3 kB 0.57 vs 0.34 ms; 36 kB 1.61 vs 1.45 ms; 70-150 kB about even; 10k x 1,000
equal, 373 kB: 8.5-8.8 vs 9.3-10.1 ms; 1M x 2,000, 32 MB: ~0.3 vs ~0.8 s)."""


def run_job(
    kind: Kind,
    body: bytes | dict[str, Any],
    limits: Limits,
    *,
    arrived: float | None = None,
    fallback_reason: str | None = None,
    on_deadline: Callable[[float], None] | None = None,
    live: LiveRates | None = None,
) -> JobResult:
    """Parse, check limits, solve. Never raises for anything a client can send.

    `body` is the request's JSON bytes, or (the groups path, which parsed and filled in the
    request already) its contract dict: then it is not serialised and parsed again.

    The request's time limit counts from `arrived` (a monotonic instant, where the request came
    in; now when None); once the limit is known, `on_deadline` is told the deadline. `live`: the
    watched cluster's rates, for `partition_weights: "live"` (None: the service watches none).
    """
    arrived = time.monotonic() if arrived is None else arrived
    # a 1M-partition body decodes to a million small lists: no cyclic collections meanwhile
    with collector_paused():
        return _run_job(kind, body, limits, arrived, fallback_reason, on_deadline, live)


def _run_job(
    kind: Kind,
    body: bytes | dict[str, Any],
    limits: Limits,
    arrived: float,
    fallback_reason: str | None,
    on_deadline: Callable[[float], None] | None,
    live: LiveRates | None = None,
) -> JobResult:
    compact = kind == "consumer" and isinstance(body, bytes) and is_compact(body)
    # a large consumer body in the common shape: decoded with its claims as columns (models/consumer/wire.py)
    wire: WireRequest | CompactRequest | None = (
        decode_consumer(body)
        if kind == "consumer" and isinstance(body, bytes) and len(body) >= COLUMN_DECODE_MIN_BYTES and not compact
        else None
    )
    try:
        if compact:
            assert isinstance(body, bytes)
            wire = decode_compact(body)
        data = body if isinstance(body, dict) else wire.data if wire is not None else load_object_fast(body)
    except ProblemError as problem:
        return error(422, problem.field, problem.reason)
    cost = (
        compact_request_cost(wire.partitions, wire.subscriptions, wire.member_subscription)
        if isinstance(wire, CompactRequest)
        else request_cost(kind, data)
    )
    sizes = {"partitions": cost.partitions, "members": cost.members}
    over = over_limits(kind, cost, limits)
    if over is not None:
        field, reason = over
        return error(413, field, reason, partitions=cost.partitions, members=cost.members)
    try:
        sent = len(body) if isinstance(body, bytes) else 0  # a parsed request is not decoded again
        floor = floor_ms(kind, cost.partitions, sent, limits.floor_scale)
        context = wire.context if wire is not None else None
        return _solve(kind, data, limits, arrived, fallback_reason, on_deadline, sizes, floor, context, live, compact)
    except ProblemError as problem:
        return error(422, problem.field, problem.reason, partitions=sizes["partitions"], members=sizes["members"])


def _solve(
    kind: Kind,
    data: dict[str, Any],
    limits: Limits,
    arrived: float,
    fallback_reason: str | None,
    on_deadline: Callable[[float], None] | None,
    sizes: dict[str, int],
    floor: int = 0,
    context: dict[str, Any] | None = None,
    live: LiveRates | None = None,
    compact: bool = False,
) -> JobResult:
    started = time.perf_counter()
    problem: ConsumerProblem | StreamsProblem
    problem = parse(ConsumerProblem, data, context) if kind == "consumer" else parse(StreamsProblem, data)
    measured: list[str] = []
    if isinstance(problem, ConsumerProblem):
        problem, measured = fill_live_weights(problem, live)
    asked = problem.options.time_limit_ms or limits.default_time_limit_ms
    capped = min(asked, limits.max_time_limit_ms)
    kept = max(capped, floor)  # the time limit this request can be kept to: the promise
    if on_deadline is not None:
        on_deadline(TimeBudget.of_ms(kept, started=arrived).deadline)
    # the solvers aim at the client's own (capped) limit, not at the floor: the floor widens the
    # promise, it is not more time to spend (README 'Floor per size')
    budget = TimeBudget.of_ms(capped, started=arrived)
    problem = problem.model_copy(update={"options": problem.options.model_copy(update={"time_limit_ms": capped})})
    solution: ConsumerSolution | StreamsSolution
    if isinstance(problem, ConsumerProblem):
        solution = solve_consumer(problem, fallback_reason=fallback_reason, budget=budget, compact_answer=compact)
    else:
        solution = solve_streams(problem, fallback_reason=fallback_reason, budget=budget)
    stats = solution.stats
    stats.warnings.extend(measured)
    if capped < asked:
        stats.warnings.append(f"time_limit_ms capped to {capped} (STICKYD_MAX_TIME_LIMIT_MS)")
    if kept > capped:
        stats.warnings.append(raised_to_floor(kind, capped, kept, sizes["partitions"]))
    return JobResult(
        status=200,
        body=_answer_compact(problem, solution)
        if compact and isinstance(problem, ConsumerProblem)
        else _answer_json(solution),
        strategy=stats.strategy,
        solver=stats.solver,
        optimal=stats.optimal,
        fallback=stats.fallback,
        solve_ms=(time.perf_counter() - started) * 1000,
        fallback_cause=stats.fallback_cause,
        **sizes,
    )


def _answer_json(solution: ConsumerSolution | StreamsSolution) -> bytes:
    if isinstance(solution, LazyConsumerSolution):
        return solution.answer_json()
    if isinstance(solution, StreamsSolution):
        return streams_answer_json(solution)
    return solution.model_dump_json().encode()


def _answer_compact(problem: ConsumerProblem, solution: ConsumerSolution | StreamsSolution) -> bytes:
    assert isinstance(solution, ConsumerSolution)
    written = solution.answer_compact() if isinstance(solution, LazyConsumerSolution) else None
    return written if written is not None else encode_solution(problem, solution)


def raised_to_floor(kind: Kind, limit_ms: int, floor: int, units: int) -> str:
    noun = "partitions" if kind == "consumer" else "tasks"
    return (
        f"time_limit_ms raised from {limit_ms} to {floor}: the floor for a request of {units} {noun} "
        "(what reading, parsing and answering it costs; README 'Floor per size')"
    )


def warm_up() -> bool:
    """Import and exercise the solvers once, so the first real request is not slow."""
    solve_consumer({"topics": {"t": 2}, "members": [{"id": "a", "topics": ["t"]}]})
    solve_streams({"subtopologies": [{"id": "0", "partitions": 2}], "clients": [{"id": "a"}, {"id": "b"}]})
    return True
