"""Balance `per_topic` and `load` (docs/wire-format.md, "What balanced means"): which solver answers,
within the request's time budget, and the `stats` that say what is proven.

The dispatcher hands every request whose `options.balance` is not `count`, that sends `capacity` /
`partition_weights` with `count`, or that asks for `lag-greedy`, to `solve_balanced`. Baselines
answer as they always do (with `stats.load` measured on their answer); `optimal` takes, for
`per_topic`, the extras' flow (with joins or racks, the full per-topic flow; CP-SAT for mixed unit
widths), and for `load` the exact CP-SAT model where it fits, else the shed-and-place heuristic
with proven bounds; whatever runs out of time falls back as `count` does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from operator import attrgetter

import numpy as np

from stickyd.models.consumer.balance import BalanceIndex, index_balance
from stickyd.models.consumer.index import ConsumerIndex, index_consumer_problem
from stickyd.models.consumer.problem import ConsumerProblem, ConsumerSolution, ConsumerStats, LoadStats
from stickyd.models.consumer.validation import unit_violations
from stickyd.models.fallback_cause import FallbackCause
from stickyd.solvers.budget import TimeBudget
from stickyd.solvers.consumer.lazy_solution import LazyConsumerSolution
from stickyd.solvers.consumer.load.bound import (
    fractional_bound,
    heaviest_unit_bound,
    heaviest_units_bound,
    moves_lower_bound,
)
from stickyd.solvers.consumer.load.data import LoadData, load_data
from stickyd.solvers.consumer.load.exact import (
    EXACT_MAX_PAIRS,
    ExactLoad,
    bottleneck_of,
    kept_of,
    pair_count,
    solve_load_exact,
)
from stickyd.solvers.consumer.load.heuristic import shed_and_place, tight_answer
from stickyd.solvers.consumer.load.lag_greedy import solve_lag_greedy
from stickyd.solvers.consumer.load.per_topic_cpsat import PER_TOPIC_MAX_PAIRS, per_topic_pairs, solve_per_topic_cpsat
from stickyd.solvers.consumer.load.per_topic_extras import fits_extras, solve_per_topic_extras
from stickyd.solvers.consumer.load.per_topic_flow import member_unit_widths, solve_per_topic_flow
from stickyd.solvers.consumer.result import build_solution
from stickyd.solvers.errors import SolverFailure, SolveTimeout
from stickyd.solvers.outcome import Outcome, cause_of
from stickyd.solvers.time_policy import LOAD_EXACT_SHARE, OPTIMAL_SHARE

log = logging.getLogger(__name__)

Fallback = Callable[[ConsumerIndex, str, str, FallbackCause], tuple[list[np.ndarray], Outcome]]
"""(index, why, strategy, cause) -> the count fallback's owners and outcome, within the budget."""
CountSolve = Callable[[ConsumerProblem], ConsumerSolution]
"""solves a problem with balance `count` as the dispatcher always has."""

_CAPACITY = attrgetter("capacity")


def uses_balance(problem: ConsumerProblem) -> bool:
    """Whether the request needs this module: a balance other than count, or load fields sent."""
    return (
        problem.options.balance != "count"
        or problem.options.strategy == "lag-greedy"
        or problem.partition_weights is not None
        or any(map(_CAPACITY, problem.members))  # a capacity is at least 1 when given
    )


def solve_balanced(
    problem: ConsumerProblem,
    budget: TimeBudget,
    started: float,
    fallback_reason: str | None,
    fallback: Fallback,
    count: CountSolve,
) -> ConsumerSolution:
    options = problem.options
    index = index_consumer_problem(problem)
    balance = index_balance(problem, index)  # ProblemError for weights it cannot have
    if options.strategy in ("sticky", "range", "roundrobin") or (
        options.strategy == "optimal" and options.balance == "count"
    ):  # answered as with count; `load` adds the figures of the answer
        plain = problem.model_copy(
            update={
                "options": options.model_copy(update={"balance": "count"}),
                "partition_weights": None,
                "members": [m.model_copy(update={"capacity": None}) for m in problem.members],
            }
        )
        solution = count(plain)
        solution.stats.warnings.extend(balance.warnings)
        if options.balance != "load":
            return solution
        owners = _owners_of(index, solution)
        data = load_data(index, balance)
        return _with_stats(solution, _with_load(solution.stats, data, index, owners, proven=None))
    proven: Proof | None = None
    if fallback_reason is not None:
        owners, outcome = fallback(index, fallback_reason, options.strategy, FallbackCause.SERVICE_DEADLINE)
    elif options.strategy == "lag-greedy":
        owners, outcome = _lag_greedy(index, balance, budget, fallback)
    elif options.balance == "per_topic":
        owners, outcome = _per_topic(index, budget, fallback)
    else:
        owners, outcome, proven = _load(index, balance, budget, fallback)
    problems = unit_violations(index, owners)
    if problems:
        log.error("balanced answer failed validation, falling back: %s", problems[:3])
        owners, outcome = fallback(index, "optimal answer was invalid", options.strategy, FallbackCause.INVALID_ANSWER)
        proven = None
    outcome = replace(outcome, warnings=(*balance.warnings, *outcome.warnings))
    solution = build_solution(problem, index, owners, outcome, (time.monotonic() - started) * 1000)
    if options.balance != "load":
        return solution
    data = load_data(index, balance)
    return _with_stats(solution, _with_load(solution.stats, data, index, owners, proven))


def _per_topic(index: ConsumerIndex, budget: TimeBudget, fallback: Fallback) -> tuple[list[np.ndarray], Outcome]:
    """The extras' flow when every group is one topic and no racks are given; else CP-SAT when
    members' units differ in width or racks are given, and the group is small enough; else the
    flow: proven when every member's units are of one width (racks are then left out: they are a
    tie-break below the proven levels)."""
    share = budget.share(OPTIMAL_SHARE)
    try:
        if fits_extras(index):
            owners = solve_per_topic_extras(index, lambda: share.check("the per-topic flow"))
            return owners, Outcome(strategy="optimal", solver="min-cost-flow", optimal=True)
        _, uniform = member_unit_widths(index)
        said = ("members take units of different widths: totals balanced by units, not partitions",)
        if (not uniform or index.has_racks) and per_topic_pairs(index) <= PER_TOPIC_MAX_PAIRS:
            try:
                owners = solve_per_topic_cpsat(index, share.share(LOAD_EXACT_SHARE).deadline)
                return owners, Outcome(strategy="optimal", solver="cp-sat", optimal=True)
            except SolveTimeout as reason:
                said = (f"the per-topic CP-SAT model stopped ({reason}): totals balanced by units",)
        owners, proven = solve_per_topic_flow(index, lambda: share.check("the per-topic flow"))
        if proven:
            return owners, Outcome(strategy="optimal", solver="min-cost-flow", optimal=True)
        # CP-SAT stopped or would not fit the time: the flow's spread, unproven
        return owners, Outcome(
            strategy="optimal", solver="min-cost-flow", fallback_cause=FallbackCause.SOLVER_TIME_LIMIT, warnings=said
        )
    except (SolveTimeout, SolverFailure) as reason:
        why, cause = f"the per-topic solver stopped: {reason}", cause_of(reason)
    except Exception as error:  # noqa: BLE001 - any solver bug must still yield an answer
        log.exception("per-topic solver crashed")
        why, cause = f"the per-topic solver failed ({type(error).__name__})", FallbackCause.SOLVER_ERROR
    return fallback(index, why, "optimal", cause)


def _lag_greedy(
    index: ConsumerIndex, balance: BalanceIndex, budget: TimeBudget, fallback: Fallback
) -> tuple[list[np.ndarray], Outcome]:
    try:
        owners = solve_lag_greedy(load_data(index, balance), budget)
        return owners, Outcome(strategy="lag-greedy", solver="lag-greedy")
    except SolveTimeout as reason:
        return fallback(index, str(reason), "lag-greedy", FallbackCause.SOLVER_TIME_LIMIT)


Proof = tuple[Fraction | None, Fraction, int, bool]
"""(L* when proven, a proven lower bound on it, a proven lower bound on the moves, moves proven)."""


def _load(
    index: ConsumerIndex, balance: BalanceIndex, budget: TimeBudget, fallback: Fallback
) -> tuple[list[np.ndarray], Outcome, Proof | None]:
    share = budget.share(OPTIMAL_SHARE)
    try:
        data = load_data(index, balance)
        ceiling = _any_bottleneck(data)
        bound = fractional_bound(data, ceiling, share)
        owners = shed_and_place(data, bound, share)
        known = bottleneck_of(data, owners)
        # another valid answer, shed to the bound itself: its bottleneck bounds L* from above
        # closer than the sticky answer's, which raises the proven floor on the moves
        tight = _tight_in_time(data, bound, share)
        best = known if tight is None else min(known, bottleneck_of(data, tight))
        if tight is not None and known > (1 + data.tolerance) * best:
            owners, known = _stickiest_under(data, best, tight, share)
        exact = _exact_in_time(data, index, owners, share.share(LOAD_EXACT_SHARE).deadline)
        if exact is not None:
            if exact.bottleneck is not None:
                moves = (
                    exact.moves_bound
                    if exact.moves_bound is not None
                    else moves_lower_bound(data, index.owned, exact.bottleneck)
                )
                proof: Proof = (exact.bottleneck, exact.bottleneck, moves, exact.moves is not None)
                outcome = Outcome(strategy="optimal", solver="cp-sat", optimal=exact.moves is not None)
                return exact.owners, outcome, proof
            best = min(best, bottleneck_of(data, exact.owners))
            if known > (1 + data.tolerance) * best:
                # the sticky answer is surely beyond the tolerance: shed again under the better bottleneck
                owners, known = _stickiest_under(data, best, exact.owners, share)
        moves = moves_lower_bound(data, index.owned, best)
        kept = kept_of(index, owners)
        # level 1 proven when some answer reaches the bound; level 2 when this one is within the
        # tolerance of it and moves no more than the proven least
        proven = best == bound and known <= (1 + data.tolerance) * bound and index.owned - kept == moves
        proof = (bound if best == bound else None, bound, moves, proven)
        return owners, Outcome(strategy="optimal", solver="load-heuristic", optimal=proven), proof
    except (SolveTimeout, SolverFailure) as reason:
        why, cause = f"the load solver stopped: {reason}", cause_of(reason)
    except Exception as error:  # noqa: BLE001 - any solver bug must still yield an answer
        log.exception("load solver crashed")
        why, cause = f"the load solver failed ({type(error).__name__})", FallbackCause.SOLVER_ERROR
    owners, outcome = fallback(index, why, "optimal", cause)
    return owners, outcome, None


def _tight_in_time(data: LoadData, bound: Fraction, budget: TimeBudget) -> list[np.ndarray] | None:
    """The tolerance-free answer, or None when the time left is too short for it (the sticky
    answer then stands with a looser floor on the moves)."""
    try:
        return tight_answer(data, bound, budget)
    except SolveTimeout:
        return None


def _exact_in_time(data: LoadData, index: ConsumerIndex, start: list[np.ndarray], deadline: float) -> ExactLoad | None:
    """The exact model's answer from `start`, or None when the group is too large or time too short."""
    if pair_count(data) > EXACT_MAX_PAIRS:
        return None
    try:
        return solve_load_exact(data, index, start, deadline)
    except SolveTimeout:
        return None


def _stickiest_under(
    data: LoadData, best: Fraction, exact: list[np.ndarray], budget: TimeBudget
) -> tuple[list[np.ndarray], Fraction]:
    """shed-and-place under (1 + tolerance) x `best` (a reached bottleneck), or the answer that
    reached it when shedding does not get within that."""
    owners = shed_and_place(data, best, budget)
    known = bottleneck_of(data, owners)
    if known <= (1 + data.tolerance) * best:
        return owners, known
    return exact, best


def _any_bottleneck(data: LoadData) -> Fraction:
    """An upper bound on L*: everything on the smallest member it could go to, all at once."""
    total = sum(int(g.weight.max(axis=0).sum()) for g in data.groups if g.weight.size)
    return Fraction(total, int(data.capacity.min())) if len(data.capacity) else Fraction(0)


def _with_load(
    stats: ConsumerStats, data: LoadData, index: ConsumerIndex, owners: list[np.ndarray], proven: Proof | None
) -> ConsumerStats:
    normalized = data.member_weights(owners) / data.capacity
    if proven is None:
        known = bottleneck_of(data, owners)
        bound = max(heaviest_unit_bound(data), heaviest_units_bound(data))
        proven = (None, bound, moves_lower_bound(data, index.owned, known), False)
    _, bound, moves, _ = proven
    figures = LoadStats(
        max=float(normalized.max()),
        min=float(normalized.min()),
        lower_bound=float(bound),
        moves_lower_bound=min(moves, stats.moves),
    )
    return stats.model_copy(update={"load": figures})


def _owners_of(index: ConsumerIndex, solution: ConsumerSolution) -> list[np.ndarray]:
    """Unit owners read back from an answer's partition maps (for the baselines' stats.load)."""
    assignment = solution.target if solution.target is not None else solution.assignment
    owner = {t: np.full(n, -1, dtype=np.int64) for t, n in index.topics.items()}
    position = {m: i for i, m in enumerate(index.members)}
    for member, parts in assignment.items():
        for topic, partitions in parts.items():
            owner[topic][np.asarray(partitions, dtype=np.int64)] = position[member]
    return [np.stack([owner[t][: g.units] for t in g.topics]).max(axis=0) for g in index.groups]


def _with_stats(solution: ConsumerSolution, stats: ConsumerStats) -> ConsumerSolution:
    """The same answer with `stats` replaced, its partition maps still unbuilt if they were."""
    if isinstance(solution, LazyConsumerSolution) and solution._maps is not None:  # noqa: SLF001
        return LazyConsumerSolution.of(stats, solution._maps, solution._writer)  # noqa: SLF001
    return solution.model_copy(update={"stats": stats})
