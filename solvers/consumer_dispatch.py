"""The one place that owns the time limit and the fallback for consumer-group assignment."""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from models.consumer import ConsumerProblem, ConsumerSolution
from models.consumer_index import ConsumerIndex, index_consumer_problem
from models.consumer_validation import unit_violations
from models.errors import parse
from solvers.budget import TimeBudget
from solvers.consumer_baselines import solve_range, solve_roundrobin
from solvers.consumer_classes import build_classes
from solvers.consumer_cpsat import solve_cpsat
from solvers.consumer_equal import solve_equal
from solvers.consumer_flow import solve_min_cost_flow
from solvers.consumer_result import Outcome, build_solution
from solvers.consumer_sticky import solve_sticky
from solvers.errors import SolverFailure, SolveTimeout

log = logging.getLogger(__name__)

DEFAULT_TIME_LIMIT_MS = 10_000
OPTIMAL_SHARE = 0.8
"""Part of the time limit the optimal solver may use; the rest is kept for the fallback."""


def solve_consumer(
    problem: ConsumerProblem | dict[str, Any],
    *,
    default_time_limit_ms: int = DEFAULT_TIME_LIMIT_MS,
    fallback_reason: str | None = None,
    budget: TimeBudget | None = None,
) -> ConsumerSolution:
    """Assign partitions as `problem.options.strategy` says; always a valid answer.

    `fallback_reason` (set by a caller whose own deadline passed) skips straight to the
    KIP-54 heuristic and says why in `stats`. `budget` (made where the request arrived) bounds
    the whole call; without one, the request's `time_limit_ms` counts from now. Raises
    models.ProblemError (naming the field) when the request does not fit the contract.
    """
    started = time.monotonic()
    problem = parse(ConsumerProblem, problem)
    options = problem.options
    if budget is None:
        budget = TimeBudget.of_ms(options.time_limit_ms or default_time_limit_ms, started=started)
    index = index_consumer_problem(problem)
    if fallback_reason is not None:
        owners = solve_sticky(index)
        outcome = Outcome(options.strategy, "kip54-sticky", False, True, (fallback_reason,))
    elif options.strategy == "range":
        owners, outcome = solve_range(index), Outcome("range", "range", False, False)
    elif options.strategy == "roundrobin":
        owners, outcome = solve_roundrobin(index), Outcome("roundrobin", "roundrobin", False, False)
    elif options.strategy == "sticky":
        owners, outcome = solve_sticky(index), Outcome("sticky", "kip54-sticky", False, False)
    else:
        owners, outcome = _optimal_or_fallback(index, problem, budget.share(OPTIMAL_SHARE).deadline)
    if options.strategy == "optimal" and not outcome.fallback:
        problems = unit_violations(index, owners)
        if problems:
            log.error("optimal answer failed validation, falling back: %s", problems[:3])
            owners = solve_sticky(index)
            outcome = Outcome("optimal", "kip54-sticky", False, True, ("optimal answer was invalid",))
    return build_solution(problem, index, owners, outcome, _ms(started))


def _optimal_or_fallback(
    index: ConsumerIndex, problem: ConsumerProblem, deadline: float
) -> tuple[list[np.ndarray], Outcome]:
    options = problem.options
    try:
        if index.equal_subscriptions and options.max_imbalance == 0:
            return solve_equal(index), Outcome("optimal", "direct-equal", True, False)
        classes = build_classes(index)
        weights = _uniform_unit_weights(index)
        if weights is not None:
            answer = solve_min_cost_flow(
                index, classes, weights, max_imbalance=options.max_imbalance, deadline=deadline
            )
            return answer.owners, Outcome("optimal", "min-cost-flow", True, False)
        owners = solve_cpsat(index, classes, max_imbalance=options.max_imbalance, deadline=deadline)
        return owners, Outcome("optimal", "cp-sat", True, False)
    except (SolveTimeout, SolverFailure) as reason:
        why = f"fell back to the KIP-54 heuristic: {reason}"
    except Exception as error:  # noqa: BLE001 - any solver bug must still yield an answer
        log.exception("optimal solver crashed")
        why = f"fell back to the KIP-54 heuristic: optimal solver failed ({type(error).__name__})"
    return solve_sticky(index), Outcome("optimal", "kip54-sticky", False, True, (why,))


def _uniform_unit_weights(index: ConsumerIndex) -> dict[int, int] | None:
    """member -> partitions per unit, when every unit a member may take weighs the same
    (then squared loads are a flow cost); None when some member mixes weights."""
    weights: dict[int, int] = {}
    for group in index.groups:
        if group.units == 0:
            continue
        for m in group.eligible:
            if weights.setdefault(m, group.weight) != group.weight:
                return None
    return weights


def _ms(started: float) -> float:
    return (time.monotonic() - started) * 1000
