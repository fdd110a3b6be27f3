"""The one place that owns the time limit and the fallback for Streams task assignment."""

from __future__ import annotations

import logging
import time
from typing import Any

from stickyd.models.errors import parse
from stickyd.models.fallback_cause import FallbackCause
from stickyd.models.streams.index import StreamsIndex, index_streams_problem
from stickyd.models.streams.problem import StreamsProblem, StreamsSolution
from stickyd.models.streams.validation import target_violations
from stickyd.solvers.budget import TimeBudget
from stickyd.solvers.errors import InvalidAnswer, SolverFailure, SolveTimeout
from stickyd.solvers.outcome import Outcome, cause_of
from stickyd.solvers.streams.baselines import solve_greedy, solve_sticky
from stickyd.solvers.streams.cpsat_bound import cpsat_certify
from stickyd.solvers.streams.flow import StreamsTarget, solve_streams_flows
from stickyd.solvers.streams.lp_bound import lp_proves
from stickyd.solvers.streams.quick_fill import solve_quick_streams
from stickyd.solvers.streams.result import balance_excess, build_streams_solution, standby_move_cost
from stickyd.solvers.streams.stage_estimates import answer_s, flows_s, skipped, sticky_s
from stickyd.solvers.streams.standby_bound import StreamsBound, streams_bounds
from stickyd.solvers.streams.stateless import settle_stateless
from stickyd.solvers.streams.warm_standbys import place_warm_standbys
from stickyd.solvers.time_policy import DEFAULT_TIME_LIMIT_MS, OPTIMAL_SHARE

log = logging.getLogger(__name__)

OPTIMAL_SHARE_LEFT = "its share of the time limit"
TIME_LEFT = "the time limit (less the answer's time)"


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
        target, outcome = _fallback(index, budget, options.strategy, (fallback_reason,), FallbackCause.SERVICE_DEADLINE)
    elif options.strategy == "greedy":
        target, outcome = solve_greedy(index), Outcome(strategy="greedy", solver="greedy")
    elif options.strategy == "sticky":
        # the sticky heuristic asked for: the quick fill only when it would be late
        target, outcome = _fallback(index, budget, "sticky", (), None)
    else:
        target, outcome = _optimal_or_fallback(index, budget)
    return build_streams_solution(problem, index, target, outcome, (time.monotonic() - started) * 1000)


def _fallback(
    index: StreamsIndex, budget: TimeBudget, strategy: str, said: tuple[str, ...], cause: FallbackCause | None
) -> tuple[StreamsTarget, Outcome]:
    """The sticky heuristic when it finishes in time (keeping time to build the answer), else
    the quick valid fill (solvers/streams/quick_fill.py): not started at all when its estimate
    (solvers/streams/stage_estimates.py) does not fit in what is left. `cause` is why the optimal
    solver did not answer; None when the heuristic itself was asked for."""
    heuristic = TimeBudget(budget.deadline - answer_s(index))
    estimate, left = sticky_s(index), heuristic.left_s()
    if estimate > left:
        late = f"{skipped('the sticky heuristic', estimate, left, index, TIME_LEFT)}: quick valid fill"
    else:
        try:
            target = solve_sticky(index, heuristic)
            return target, Outcome(strategy=strategy, solver="sticky", fallback_cause=cause, warnings=said)
        except SolveTimeout:
            late = "the sticky heuristic ran out of the time limit: quick valid fill"
    return solve_quick_streams(index), Outcome(
        strategy=strategy,
        solver="quick-fill",
        fallback_cause=cause or FallbackCause.SOLVER_TIME_LIMIT,
        warnings=(*said, late),
    )


def _optimal_or_fallback(index: StreamsIndex, whole: TimeBudget) -> tuple[StreamsTarget, Outcome]:
    budget = whole.share(OPTIMAL_SHARE)
    not_started = _why_not_optimal(index, budget)
    if not_started is not None:
        said = (f"fell back to the sticky heuristic: {not_started}",)
        return _fallback(index, whole, "optimal", said, FallbackCause.SOLVER_TIME_LIMIT)
    try:
        budget.check("the streams active flow")
        target = solve_streams_flows(index, budget)
        problems = target_violations(index, target.active, target.standby)
        if problems:
            raise InvalidAnswer(f"flow answer invalid: {problems[0]}")
        budget.check("the streams certificate")
        certified, proven, warnings = _certify(index, target, budget)
    except (SolveTimeout, SolverFailure) as reason:
        why = f"fell back to the sticky heuristic: {reason}"
        cause = cause_of(reason)
    except Exception as error:  # noqa: BLE001 - any solver bug must still yield an answer
        log.exception("optimal streams solver crashed")
        why = f"fell back to the sticky heuristic: optimal solver failed ({type(error).__name__})"
        cause = FallbackCause.SOLVER_ERROR
    else:
        # the integer programme's target where it beat the flows'
        solver = "min-cost-flow" if certified is target else "cp-sat"
        settled = _settled(index, certified, budget)
        shared = _standbys_on_active_rack(index, settled)
        if shared:
            warnings += (
                f"{shared} standbys share their active's rack: rack spread (KIP-925) is a tie-break below "
                "standby moves, not a proven level",
            )
        return settled, Outcome(strategy="optimal", solver=solver, optimal=proven, warnings=warnings)
    return _fallback(index, whole, "optimal", (why,), cause)


def _settled(index: StreamsIndex, target: StreamsTarget, budget: TimeBudget) -> StreamsTarget:
    """The tie-breaks below every level: on the stateless tasks, fewest moved, then fewest idle
    clients (solvers/streams/stateless.py); new standby replicas where their state already is
    (solvers/streams/warm_standbys.py). Each is skipped when time is up or its result would not
    be a valid target."""
    for tie_break in (settle_stateless, place_warm_standbys):
        if budget.expired():
            return target
        try:
            settled = tie_break(index, target)
        except SolverFailure:
            continue
        if settled is not target and not target_violations(index, settled.active, settled.standby):
            target = settled
    return target


def _why_not_optimal(index: StreamsIndex, budget: TimeBudget) -> str | None:
    """Why the flows are not worth starting (None: start them): their estimate does not fit in
    their share of what is left. (Where the active flow's lexicographic costs would overflow
    64-bit costs as one weighted sum, it is solved level by level: solvers/flows/levels.py.)"""
    estimate, left = flows_s(index), budget.left_s()
    return skipped("the streams active flow", estimate, left, index, OPTIMAL_SHARE_LEFT) if estimate > left else None


def _certify(
    index: StreamsIndex, target: StreamsTarget, budget: TimeBudget
) -> tuple[StreamsTarget, bool, tuple[str, ...]]:
    """The target (the integer programme's where it beats the flows'), and whether every level
    is proven: balance (no active or per-subtopology excess, the least
    stateful excess), then kept actives, then standby moves. A balanced answer's active moves
    are minimal by the active flow (a relaxation of every balanced target) and with no standby
    moved it is optimal outright; otherwise the answer must meet the relaxations of
    `streams_bounds`, each of which bounds a level only where it met every level above it, or
    the linear programme's, or the integer programme's on classes of tasks (which, where it
    finds a better target, replaces the answer with it). Relaxations stop being tried when
    `budget` runs out (the answer then stays unproven)."""
    excess = balance_excess(index, target)
    had = index.stateful & (index.prev_active >= 0)
    # (with restore costs the stickiness levels are summed costs, else counts)
    answer = StreamsBound(
        stateful_excess=excess["stateful"] + (excess["active"] + excess["subtopology"]) * (index.task_count + 1),
        kept_actives=index.cost_of(had & (target.active == index.prev_active)),
        standby_moves=standby_move_cost(index, target),
    )
    warnings: list[str] = []
    if answer.stateful_excess == 0 and answer.standby_moves == 0:
        return target, True, tuple(warnings)
    bounds: list[StreamsBound] = []
    best = StreamsBound(-1, -1, -1)
    for bound in streams_bounds(index):
        bounds.append(bound)
        best = _tightest(bounds)
        if best == answer or budget.expired():
            break
    met = [
        answer.stateful_excess == best.stateful_excess,
        answer.kept_actives == best.kept_actives,
        answer.standby_moves == best.standby_moves,
    ]
    # where the flows fall short, the linear programme (levels the flows proved are only held)
    proven = (met + [False]).index(False)
    if proven == 3 or (not budget.expired() and lp_proves(index, answer, budget.left_s(), proven)):
        return target, True, tuple(warnings)
    # the integer programme on classes of tasks, where it is small enough
    if excess["active"] + excess["subtopology"] == 0 and not budget.expired():
        exact = StreamsBound(excess["stateful"], answer.kept_actives, answer.standby_moves)
        verdict = cpsat_certify(index, target, exact, budget.left_s(), proven)
        if verdict.better is not None and not target_violations(index, verdict.better.active, verdict.better.standby):
            # (rack spread is not a level: the flows' tie-break is not redone here)
            return verdict.better, True, tuple(warnings)
        if verdict.proven and verdict.better is None:
            return target, True, tuple(warnings)
    moves = ("active move cost", "standby move cost") if index.weighted else ("active moves", "standby moves")
    level = ("balance", *moves)[met.index(False)]
    most = index.cost_of(had)
    warnings.insert(
        0,
        f"{level} not proven minimal: the answer has {excess['stateful']} stateful excess, "
        f"{most - answer.kept_actives} {moves[0]} and {answer.standby_moves} {moves[1]}; "
        f"the lower bounds are {max(best.stateful_excess, 0)}, {most - best.kept_actives if bounds else 0} and "
        f"{max(best.standby_moves, 0)}",
    )
    return target, False, tuple(warnings)


def _tightest(bounds: list[StreamsBound]) -> StreamsBound:
    """Level by level, the tightest bound among relaxations that met every level above it."""
    excess = max(b.stateful_excess for b in bounds)
    kept = min(b.kept_actives for b in bounds if b.stateful_excess == excess)
    moved = max(b.standby_moves for b in bounds if (b.stateful_excess, b.kept_actives) == (excess, kept))
    return StreamsBound(excess, kept, moved)


def _standbys_on_active_rack(index: StreamsIndex, target: StreamsTarget) -> int:
    if not index.replicas or not any(index.racks):
        return 0
    return int(index.same_rack(target.active[index.stateful][:, None], target.standby[index.stateful]).sum())
