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
from stickyd.solvers.budget import TimeBudget
from stickyd.solvers.collector import collector_paused
from stickyd.solvers.consumer.classes import build_classes
from stickyd.solvers.consumer.equal import solve_equal
from stickyd.solvers.consumer.flow import solve_min_cost_flow
from stickyd.solvers.consumer.flow_estimate import (
    RunningPace,
    answer_after_flow_s,
    network_arcs,
    network_units,
    optimal_flow_s,
)
from stickyd.solvers.consumer.kip54_sticky import solve_sticky
from stickyd.solvers.consumer.load.solve import solve_balanced, uses_balance
from stickyd.solvers.consumer.mixed.cpsat import solve_cpsat
from stickyd.solvers.consumer.mixed.one_each import one_unit_each
from stickyd.solvers.consumer.mixed.split_bound import split_bound
from stickyd.solvers.consumer.quick_fill import solve_quick
from stickyd.solvers.consumer.range_roundrobin import solve_range, solve_roundrobin
from stickyd.solvers.consumer.result import Outcome, build_solution
from stickyd.solvers.consumer.small.solve import fits, solve_tiny
from stickyd.solvers.errors import SolverFailure, SolveTimeout

log = logging.getLogger(__name__)

DEFAULT_TIME_LIMIT_MS = 10_000
OPTIMAL_SHARE = 0.8
"""Part of the time limit the optimal solver may use; the rest is kept for the fallback."""
ANSWER_S_PER_PARTITION = 4e-7
"""time kept, per partition, to build the answer after any solver (and for the quick fill)."""
ANSWER_S_FIXED = 0.015
"""time kept whatever the size, for the quick fill and the answer after a heuristic that ran out."""
STICKY_S_PER_UNIT = 6e-6
"""what the KIP-54 heuristic costs per unit at most (1M units: about 6 s on a 2-core machine)."""


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
    with collector_paused():
        return _solve_consumer(problem, default_time_limit_ms, fallback_reason, budget)


def _solve_consumer(
    problem: ConsumerProblem | dict[str, Any],
    default_time_limit_ms: int,
    fallback_reason: str | None,
    budget: TimeBudget | None,
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
            lambda index, why, strategy: _fallback(index, budget, why, strategy),
            lambda plain: _solve_consumer(plain, default_time_limit_ms, fallback_reason, budget),
        )
    if fallback_reason is None and fits(problem):  # plain lists for a tiny group, same answer
        tiny = solve_tiny(problem, lambda partitions: _optimal_deadline(budget, partitions), started)
        if tiny is not None:
            return tiny
    index = index_consumer_problem(problem)
    if fallback_reason is not None:
        owners, outcome = _fallback(index, budget, fallback_reason, options.strategy)
    elif options.strategy == "range":
        owners, outcome = solve_range(index), Outcome("range", "range", False, False)
    elif options.strategy == "roundrobin":
        owners, outcome = solve_roundrobin(index), Outcome("roundrobin", "roundrobin", False, False)
    elif options.strategy == "sticky":
        owners, outcome = _sticky_in_time(index, budget)
    else:
        deadline = _optimal_deadline(budget, sum(index.topics.values()), pace)
        owners, outcome = _optimal_or_fallback(index, problem, deadline, budget, pace)
    if options.strategy == "optimal" and not outcome.fallback:
        problems = unit_violations(index, owners)
        if problems:
            log.error("optimal answer failed validation, falling back: %s", problems[:3])
            owners, outcome = _fallback(index, budget, "optimal answer was invalid", "optimal")
    return build_solution(problem, index, owners, outcome, _ms(started))


def _optimal_deadline(budget: TimeBudget, partitions: int, pace: RunningPace | None = None) -> float:
    """When the optimal solver must stop: its share of the budget, keeping time for the answer
    (its measured cost at this process's pace, solvers/consumer/flow_estimate.py; for a tiny group,
    measured no pace, twice ANSWER_S_PER_PARTITION)."""
    if pace is None:
        reserve_s = 2 * ANSWER_S_PER_PARTITION * partitions
    else:
        reserve_s = answer_after_flow_s(partitions, pace.slowdown())
    return min(budget.share(OPTIMAL_SHARE).deadline, budget.deadline - reserve_s)


def _sticky_in_time(index: ConsumerIndex, budget: TimeBudget) -> tuple[list[np.ndarray], Outcome]:
    """strategy `sticky`: the KIP-54 heuristic, or the quick fill when it would be late."""
    owners, outcome = _fallback(index, budget, "", "sticky")
    if outcome.solver == "kip54-sticky":
        return owners, Outcome("sticky", "kip54-sticky", False, False)
    return owners, outcome


def _fallback(index: ConsumerIndex, budget: TimeBudget, why: str, strategy: str) -> tuple[list[np.ndarray], Outcome]:
    """The KIP-54 heuristic when it can finish before the budget ends (keeping time to build the
    answer), else the quick fill: valid by construction and linear in the units."""
    partitions = sum(index.topics.values())
    units = sum(g.units for g in index.groups)
    # kept back: the quick fill and the answer, should the heuristic run out
    reserve_s = ANSWER_S_FIXED + 2 * ANSWER_S_PER_PARTITION * partitions
    said = (why,) if why else ()
    late = "the KIP-54 heuristic would not finish within the time limit"
    if budget.left_s() - reserve_s > STICKY_S_PER_UNIT * units:
        try:
            owners = solve_sticky(index, TimeBudget(budget.deadline - reserve_s))
            return owners, Outcome(strategy, "kip54-sticky", False, True, said)
        except SolveTimeout:
            late = "the KIP-54 heuristic ran out of the time limit"
    return solve_quick(index), Outcome(strategy, "quick-fill", False, True, (*said, f"{late}: quick valid fill"))


def _optimal_or_fallback(
    index: ConsumerIndex, problem: ConsumerProblem, deadline: float, budget: TimeBudget, pace: RunningPace
) -> tuple[list[np.ndarray], Outcome]:
    options = problem.options
    try:
        if index.equal_subscriptions and options.max_imbalance == 0:
            return solve_equal(index), Outcome("optimal", "direct-equal", True, False)
        if time.monotonic() >= deadline:  # reading the request took the optimal solver's share
            raise SolveTimeout("no time left for it within the time limit")
        late = _late_estimate(index, deadline, pace)
        if late is not None:  # the flow cannot be stopped half way: not started when it would be late
            return _fallback(index, budget, late, "optimal")
        classes = build_classes(index)
        weights = _uniform_unit_weights(index)
        if weights is not None:
            answer = solve_min_cost_flow(
                index, classes, weights, max_imbalance=options.max_imbalance, deadline=deadline
            )
            return answer.owners, Outcome("optimal", "min-cost-flow", True, False)
        one_each = one_unit_each(index, classes, deadline) if options.max_imbalance == 0 else None
        if one_each is not None:
            # a member free for every unit: balanced means one unit each, and the flow proves it
            return one_each, Outcome("optimal", "min-cost-flow", True, False)
        split = split_bound(index, deadline) if options.max_imbalance == 0 else None
        if split is not None and split.owners is not None:
            # the relaxation's answer keeps every join unit whole: optimal at every level
            return split.owners, Outcome("optimal", "min-cost-flow", True, False)
        owners = solve_cpsat(index, classes, max_imbalance=options.max_imbalance, deadline=deadline, split=split)
        return owners, Outcome("optimal", "cp-sat", True, False)
    except (SolveTimeout, SolverFailure) as reason:
        why = f"the optimal solver stopped: {reason}"
    except Exception as error:  # noqa: BLE001 - any solver bug must still yield an answer
        log.exception("optimal solver crashed")
        why = f"the optimal solver failed ({type(error).__name__})"
    return _fallback(index, budget, why, "optimal")


def _late_estimate(index: ConsumerIndex, deadline: float, pace: RunningPace) -> str | None:
    """Why the optimal solver is not started, when its network's estimated cost
    (solvers/consumer/flow_estimate.py, at the pace this process has run since the dispatcher
    started) does not fit before `deadline`; None when it fits."""
    arcs = network_arcs(index)
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
    (then squared loads are a flow cost); None when some member mixes weights."""
    live = [g for g, group in enumerate(index.groups) if group.units]
    if not live:
        return {}
    groups = [index.groups[g] for g in live]
    sizes = np.fromiter((len(g.eligible) for g in groups), dtype=np.int64, count=len(groups))
    member = np.concatenate([index.eligible_ids[g] for g in live])
    weight = np.repeat(np.fromiter((g.weight for g in groups), dtype=np.int64, count=len(groups)), sizes)
    # members in order of first appearance (the dict's order, as the flow's arcs are built from it)
    members, first = np.unique(member, return_index=True)
    by_member = np.argsort(member, kind="stable")
    same_member = np.diff(member[by_member]) == 0
    if (np.diff(weight[by_member])[same_member] != 0).any():
        return None
    order = np.argsort(first, kind="stable")
    return dict(zip(members[order].tolist(), weight[first[order]].tolist(), strict=True))


def _ms(started: float) -> float:
    return (time.monotonic() - started) * 1000
