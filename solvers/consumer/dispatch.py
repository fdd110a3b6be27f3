"""The one place that owns the time limit and the fallback for consumer-group assignment."""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from stickyd.models.consumer.index import ConsumerIndex, index_consumer_problem
from stickyd.models.consumer.problem import ConsumerProblem, ConsumerSolution
from stickyd.models.consumer.validation import unit_violations
from stickyd.models.errors import parse
from stickyd.models.fallback_cause import FallbackCause
from stickyd.solvers.budget import TimeBudget
from stickyd.solvers.collector import collector_paused
from stickyd.solvers.consumer.classes import build_classes
from stickyd.solvers.consumer.equal import solve_equal
from stickyd.solvers.consumer.flow import solve_even_at_bound, solve_min_cost_flow
from stickyd.solvers.consumer.flow_estimate import (
    RunningPace,
    answer_after_flow_s,
    network_arcs,
    network_units,
    optimal_flow_s,
)
from stickyd.solvers.consumer.incremental import MIN_UNITS, solve_incremental
from stickyd.solvers.consumer.kip54_sticky import solve_sticky
from stickyd.solvers.consumer.load.solve import solve_balanced, uses_balance
from stickyd.solvers.consumer.mixed.cpsat import solve_cpsat
from stickyd.solvers.consumer.mixed.one_each import one_unit_each
from stickyd.solvers.consumer.mixed.split_bound import split_bound
from stickyd.solvers.consumer.quick_fill import solve_quick
from stickyd.solvers.consumer.range_roundrobin import solve_range, solve_roundrobin
from stickyd.solvers.consumer.result import build_solution
from stickyd.solvers.consumer.small.solve import fits, solve_tiny
from stickyd.solvers.errors import SolverFailure, SolveTimeout
from stickyd.solvers.outcome import Outcome, cause_of
from stickyd.solvers.time_policy import (
    ANSWER_S_PER_PARTITION,
    CONSUMER_ANSWER_S_FIXED,
    DEFAULT_TIME_LIMIT_MS,
    EVEN_AT_BOUND_SHARE_OF_FLOW,
    INCREMENTAL_SHARE_OF_FLOW,
    OPTIMAL_SHARE,
    STICKY_S_PER_UNIT,
)

log = logging.getLogger(__name__)

PROVEN_BY_FLOW = Outcome(strategy="optimal", solver="min-cost-flow", optimal=True)
PROVEN_INCREMENTAL = Outcome(strategy="optimal", solver="incremental", optimal=True)


def solve_consumer(
    problem: ConsumerProblem | dict[str, Any],
    *,
    default_time_limit_ms: int = DEFAULT_TIME_LIMIT_MS,
    fallback_reason: str | None = None,
    budget: TimeBudget | None = None,
    compact_answer: bool = False,
) -> ConsumerSolution:
    """Assign partitions as `problem.options.strategy` says; always a valid answer.

    `fallback_reason` (set by a caller whose own deadline passed) skips straight to the
    KIP-54 heuristic and says why in `stats`. `budget` (made where the request arrived) bounds
    the whole call; without one, the request's `time_limit_ms` counts from now. `compact_answer`:
    the caller writes the answer in the compact encoding, so less time is kept for it. Raises
    models.ProblemError (naming the field) when the request does not fit the contract.
    """
    with collector_paused():
        return _solve_consumer(problem, default_time_limit_ms, fallback_reason, budget, compact_answer)


def _solve_consumer(
    problem: ConsumerProblem | dict[str, Any],
    default_time_limit_ms: int,
    fallback_reason: str | None,
    budget: TimeBudget | None,
    compact_answer: bool = False,
) -> ConsumerSolution:
    started = time.monotonic()
    pace = RunningPace.start()
    problem = parse(ConsumerProblem, problem)
    options = problem.options
    if budget is None:
        budget = TimeBudget.of_ms(options.time_limit_ms or default_time_limit_ms, started=started)
    if uses_balance(problem):  # balance per_topic or load, lag-greedy, or load fields sent: solvers/consumer/load/
        return solve_balanced(
            problem,
            budget,
            started,
            fallback_reason,
            lambda index, why, strategy, cause: _fallback(index, budget, why, strategy, cause),
            lambda plain: _solve_consumer(plain, default_time_limit_ms, fallback_reason, budget, compact_answer),
        )
    if fallback_reason is None and fits(problem):  # plain lists for a tiny group, same answer
        tiny = solve_tiny(problem, lambda partitions: _optimal_deadline(budget, partitions), started)
        if tiny is not None:
            return tiny
    index = index_consumer_problem(problem)
    if fallback_reason is not None:
        owners, outcome = _fallback(index, budget, fallback_reason, options.strategy, FallbackCause.SERVICE_DEADLINE)
    elif options.strategy == "range":
        owners, outcome = solve_range(index), Outcome(strategy="range", solver="range")
    elif options.strategy == "roundrobin":
        owners, outcome = solve_roundrobin(index), Outcome(strategy="roundrobin", solver="roundrobin")
    elif options.strategy == "sticky":
        # the KIP-54 heuristic asked for: the quick fill only when it would be late
        owners, outcome = _fallback(index, budget, "", "sticky", None)
    else:
        deadline = _optimal_deadline(budget, sum(index.topics.values()), pace, compact_answer)
        owners, outcome = _optimal_or_fallback(index, problem, deadline, budget, pace)
    if options.strategy == "optimal" and not outcome.fallback:
        problems = unit_violations(index, owners)
        if problems:
            log.error("optimal answer failed validation, falling back: %s", problems[:3])
            owners, outcome = _fallback(
                index, budget, "optimal answer was invalid", "optimal", FallbackCause.INVALID_ANSWER
            )
    return build_solution(problem, index, owners, outcome, _ms(started))


def _optimal_deadline(
    budget: TimeBudget, partitions: int, pace: RunningPace | None = None, compact_answer: bool = False
) -> float:
    """When the optimal solver must stop: its share of the budget, keeping time for the answer
    (its measured cost at this process's pace in the answer's encoding,
    solvers/consumer/flow_estimate.py; for a tiny group, measured no pace, twice
    ANSWER_S_PER_PARTITION)."""
    if pace is None:
        reserve_s = 2 * ANSWER_S_PER_PARTITION * partitions
    else:
        reserve_s = answer_after_flow_s(partitions, pace.slowdown(), compact=compact_answer)
    return min(budget.share(OPTIMAL_SHARE).deadline, budget.deadline - reserve_s)


def _fallback(
    index: ConsumerIndex, budget: TimeBudget, why: str, strategy: str, cause: FallbackCause | None
) -> tuple[list[np.ndarray], Outcome]:
    """The KIP-54 heuristic when it can finish before the budget ends (keeping time to build the
    answer), else the quick fill: valid by construction and linear in the units. `cause` is why
    the optimal solver did not answer; None when the heuristic itself was asked for (then only
    the quick fill is a fallback, for lack of time)."""
    partitions = sum(index.topics.values())
    units = sum(g.units for g in index.groups)
    # kept back: the quick fill and the answer, should the heuristic run out
    reserve_s = CONSUMER_ANSWER_S_FIXED + 2 * ANSWER_S_PER_PARTITION * partitions
    said = (why,) if why else ()
    late = "the KIP-54 heuristic would not finish within the time limit"
    if budget.left_s() - reserve_s > STICKY_S_PER_UNIT * units:
        try:
            owners = solve_sticky(index, TimeBudget(budget.deadline - reserve_s))
            return owners, Outcome(strategy=strategy, solver="kip54-sticky", fallback_cause=cause, warnings=said)
        except SolveTimeout:
            late = "the KIP-54 heuristic ran out of the time limit"
    return solve_quick(index), Outcome(
        strategy=strategy,
        solver="quick-fill",
        fallback_cause=cause or FallbackCause.SOLVER_TIME_LIMIT,
        warnings=(*said, f"{late}: quick valid fill"),
    )


def _optimal_or_fallback(
    index: ConsumerIndex, problem: ConsumerProblem, deadline: float, budget: TimeBudget, pace: RunningPace
) -> tuple[list[np.ndarray], Outcome]:
    options = problem.options
    try:
        if index.equal_subscriptions and options.max_imbalance == 0:
            return solve_equal(index), Outcome(strategy="optimal", solver="direct-equal", optimal=True)
        if time.monotonic() >= deadline:  # reading the request took the optimal solver's share
            raise SolveTimeout("no time left for it within the time limit")
        arcs = network_arcs(index)
        if options.max_imbalance == 0 and index.owned and sum(index.topics.values()) >= MIN_UNITS:
            # the previous assignment plus the event's consequences, when proven optimal in a
            # part of what the full flow is estimated to cost
            flow_s = optimal_flow_s(arcs, network_units(index), pace.slowdown())
            give_up_at = min(deadline, time.monotonic() + INCREMENTAL_SHARE_OF_FLOW * flow_s)
            owners = solve_incremental(index, give_up_at)
            if owners is not None:
                return owners, PROVEN_INCREMENTAL
        late = _late_estimate(index, arcs, deadline, pace)
        if late is not None:  # the flow cannot be stopped half way: not started when it would be late
            owners = _even_at_bound_in_time(index, options.max_imbalance, arcs, deadline, pace)
            if owners is not None:
                return owners, PROVEN_BY_FLOW
            return _fallback(index, budget, late, "optimal", FallbackCause.SOLVER_TIME_LIMIT)
        classes = build_classes(index)
        weights = _uniform_unit_weights(index)
        if weights is not None:
            answer = solve_min_cost_flow(
                index, classes, weights, max_imbalance=options.max_imbalance, deadline=deadline
            )
            return answer.owners, PROVEN_BY_FLOW
        one_each = one_unit_each(index, classes, deadline) if options.max_imbalance == 0 else None
        if one_each is not None:
            # a member free for every unit: balanced means one unit each, and the flow proves it
            return one_each, PROVEN_BY_FLOW
        split = split_bound(index, deadline) if options.max_imbalance == 0 else None
        if split is not None and split.owners is not None:
            # the relaxation's answer keeps every join unit whole: optimal at every level
            return split.owners, PROVEN_BY_FLOW
        owners = solve_cpsat(index, classes, max_imbalance=options.max_imbalance, deadline=deadline, split=split)
        return owners, Outcome(strategy="optimal", solver="cp-sat", optimal=True)
    except (SolveTimeout, SolverFailure) as reason:
        why, cause = f"the optimal solver stopped: {reason}", cause_of(reason)
    except Exception as error:  # noqa: BLE001 - any solver bug must still yield an answer
        log.exception("optimal solver crashed")
        why, cause = f"the optimal solver failed ({type(error).__name__})", FallbackCause.SOLVER_ERROR
    return _fallback(index, budget, why, "optimal", cause)


def _even_at_bound_in_time(
    index: ConsumerIndex, max_imbalance: int, arcs: int, deadline: float, pace: RunningPace
) -> list[np.ndarray] | None:
    """Where the full flow would be late: the even split at the moves' bound (one max flow, no costs
    to scale), when every unit weighs one partition and its estimate fits before `deadline` (the
    optimal solver's share: the fallback keeps its own part of the time limit, should no even split
    meet the bound); None otherwise."""
    if max_imbalance != 0 or _uniform_unit_weights(index) != {}:
        return None
    expected_s = EVEN_AT_BOUND_SHARE_OF_FLOW * optimal_flow_s(arcs, network_units(index), pace.slowdown())
    if expected_s > deadline - time.monotonic():
        return None
    answer = solve_even_at_bound(index, build_classes(index))
    return None if answer is None else answer.owners


def _late_estimate(index: ConsumerIndex, arcs: int, deadline: float, pace: RunningPace) -> str | None:
    """Why the optimal solver is not started, when its network's estimated cost (`arcs`:
    solvers/consumer/flow_estimate.py `network_arcs`, at the pace this process has run since the
    dispatcher started) does not fit before `deadline`; None when it fits."""
    slowdown = pace.slowdown()
    expected_s = optimal_flow_s(arcs, network_units(index), slowdown)
    left_s = deadline - time.monotonic()
    if expected_s <= left_s:
        return None
    return (
        f"the optimal solver was not started: its network ({arcs:,} arcs) is estimated at "
        f"{expected_s * 1000:.0f} ms (this process running at {slowdown:.1f}x wall per CPU second), "
        f"{max(0.0, left_s) * 1000:.0f} ms left of its share of the time limit"
    )


def _uniform_unit_weights(index: ConsumerIndex) -> dict[int, int] | None:
    """member -> partitions per unit, when every unit a member may take weighs the same
    (then squared loads are a flow cost); None when some member mixes weights. Members left out
    weigh one partition per unit (all of them when no topic is co-partitioned)."""
    live = [g for g, group in enumerate(index.groups) if group.units]
    groups = [index.groups[g] for g in live]
    if all(g.weight == 1 for g in groups):
        return {}
    sizes = np.fromiter((len(g.eligible) for g in groups), dtype=np.int64, count=len(groups))
    member = np.concatenate([index.eligible_ids[g] for g in live])
    weight = np.repeat(np.fromiter((g.weight for g in groups), dtype=np.int64, count=len(groups)), sizes)
    by_member = np.argsort(member, kind="stable")
    same_member = np.diff(member[by_member]) == 0
    if (np.diff(weight[by_member])[same_member] != 0).any():
        return None
    return dict(zip(member.tolist(), weight.tolist(), strict=True))


def _ms(started: float) -> float:
    return (time.monotonic() - started) * 1000
