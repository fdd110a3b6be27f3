"""The one place that owns the time limit and the fallback for Streams task assignment."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from models.errors import parse
from models.streams import StreamsProblem, StreamsSolution
from models.streams_index import StreamsIndex, index_streams_problem
from models.streams_validation import target_violations
from solvers.budget import TimeBudget
from solvers.errors import SolverFailure, SolveTimeout
from solvers.streams_baselines import solve_greedy, solve_sticky
from solvers.streams_flow import StreamsTarget, solve_streams_flows
from solvers.streams_result import StreamsOutcome, balance_excess, build_streams_solution, standby_moves

log = logging.getLogger(__name__)

DEFAULT_TIME_LIMIT_MS = 10_000
OPTIMAL_SHARE = 0.8


def solve_streams(
    problem: StreamsProblem | dict[str, Any],
    *,
    default_time_limit_ms: int = DEFAULT_TIME_LIMIT_MS,
    fallback_reason: str | None = None,
    budget: TimeBudget | None = None,
) -> StreamsSolution:
    """Assign Streams tasks as `problem.options.strategy` says; always a valid answer.

    `budget` (made where the request arrived) bounds the whole call; without one, the request's
    `time_limit_ms` counts from now. Raises models.ProblemError (naming the field) when the
    request does not fit the contract.
    """
    started = time.monotonic()
    problem = parse(StreamsProblem, problem)
    options = problem.options
    if budget is None:
        budget = TimeBudget.of_ms(options.time_limit_ms or default_time_limit_ms, started=started)
    index = index_streams_problem(problem)
    if fallback_reason is not None:
        target = solve_sticky(index)
        outcome = StreamsOutcome(options.strategy, "sticky", False, True, (fallback_reason,))
    elif options.strategy == "greedy":
        target, outcome = solve_greedy(index), StreamsOutcome("greedy", "greedy", False, False)
    elif options.strategy == "sticky":
        target, outcome = solve_sticky(index), StreamsOutcome("sticky", "sticky", False, False)
    else:
        target, outcome = _optimal_or_fallback(index, budget.share(OPTIMAL_SHARE).deadline)
    return build_streams_solution(problem, index, target, outcome, (time.monotonic() - started) * 1000)


def _optimal_or_fallback(index: StreamsIndex, deadline: float) -> tuple[StreamsTarget, StreamsOutcome]:
    try:
        target = _within(deadline, lambda: solve_streams_flows(index))
        problems = target_violations(index, target.active, target.standby)
        if problems:
            raise SolverFailure(f"flow answer invalid: {problems[0]}")
    except (SolveTimeout, SolverFailure) as reason:
        why = f"fell back to the sticky heuristic: {reason}"
    except Exception as error:  # noqa: BLE001 - any solver bug must still yield an answer
        log.exception("optimal streams solver crashed")
        why = f"fell back to the sticky heuristic: optimal solver failed ({type(error).__name__})"
    else:
        # proven: active moves are exact by flow; the standby level when no standby had to move
        balanced = not any(balance_excess(index, target).values())
        # (rack spreading is a preference the flow optimises for these actives, not proven)
        racks = index.replicas > 0 and any(index.racks)
        proven = balanced and standby_moves(index, target) == 0 and not racks
        warnings = (
            ()
            if proven
            else (
                "active moves are proven minimal; standby placement is optimal for these actives but "
                "not proven optimal overall",
            )
        )
        return target, StreamsOutcome("optimal", "min-cost-flow", proven, False, warnings)
    return solve_sticky(index), StreamsOutcome("optimal", "sticky", False, True, (why,))


def _within(deadline: float, work: Any) -> StreamsTarget:
    """Run `work` on a thread and give up waiting at the deadline (the flows release no
    partial answer, so an overrun is abandoned and the fallback answers)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as error:  # noqa: BLE001 - re-raised on the caller's thread
            box["error"] = error

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()))
    if worker.is_alive():
        raise SolveTimeout("the streams flows did not finish within the time limit")
    if "error" in box:
        raise box["error"]
    result: StreamsTarget = box["value"]
    return result
