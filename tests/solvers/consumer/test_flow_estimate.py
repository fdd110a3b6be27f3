"""The dispatcher estimates the optimal flow's cost from its network's size before building it
(solvers/consumer/flow_estimate.py): when the estimate does not fit in what is left of the optimal
solver's share, the flow is not started and the fallback answers in the same call, with
`stats.fallback` and the reason; when it fits, the proven answer comes as before. The estimate
counts the network's arcs and units and grows with how slowly this process has been running
during the request (wall over CPU time), and so does the time kept for the answer."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

import stickyd.solvers.consumer.dispatch
import stickyd.solvers.consumer.flow_estimate
from stickyd.models import ConsumerProblem, index_consumer_problem
from stickyd.solvers import solve_consumer
from stickyd.solvers.budget import TimeBudget
from stickyd.solvers.consumer.classes import build_classes
from stickyd.solvers.consumer.dispatch import _late_estimate, _optimal_deadline, _uniform_unit_weights
from stickyd.solvers.consumer.flow import ConsumerFlowModel, Weights
from stickyd.solvers.consumer.flow_estimate import (
    MIN_MEASURED_CPU_S,
    UNMEASURED_SLOWDOWN,
    RunningPace,
    answer_after_flow_s,
    network_arcs,
    network_units,
    optimal_flow_s,
)
from tests.conftest import assert_valid
from tests.solvers.consumer.test_properties import consumer_problems
from tests.solvers.consumer.test_spent_share import UNEQUAL as SPENT_SHARE_UNEQUAL

# cooperative with claims: past the tiny path, through the general dispatcher
UNEQUAL: dict[str, Any] = {**SPENT_SHARE_UNEQUAL, "options": {"protocol": "cooperative"}}


def test_a_network_estimated_past_the_share_falls_back_without_building_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten seconds left, but a network estimated at far more: no classes, no flow; KIP-54
    answers (it fits), flagged as a fallback whose reason names the estimate and the time left."""

    def no_model(*_args: object) -> None:
        raise AssertionError("the optimal solver's model was built although its estimate did not fit")

    monkeypatch.setattr(stickyd.solvers.consumer.dispatch, "build_classes", no_model)
    monkeypatch.setattr(stickyd.solvers.consumer.flow_estimate, "FLOW_S_PER_ARC", 3600.0)
    solution = solve_consumer(UNEQUAL, budget=TimeBudget.of_ms(10_000))
    stats = solution.stats
    assert stats.fallback and not stats.optimal
    assert stats.solver == "kip54-sticky"
    said = [w for w in stats.warnings if "the optimal solver was not started" in w]
    assert len(said) == 1 and "arcs) is estimated at" in said[0] and "ms left" in said[0]
    assert stats.fallback_cause == "solver-time-limit"
    assert_valid(UNEQUAL, solution)


def test_a_network_whose_estimate_fits_gets_the_proven_answer() -> None:
    solution = solve_consumer(UNEQUAL, budget=TimeBudget.of_ms(10_000))
    assert solution.stats.optimal and not solution.stats.fallback
    assert not any("not started" in w for w in solution.stats.warnings)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(consumer_problems(joins=False, max_partitions=8))
def test_the_estimated_arcs_bound_the_flows_routing_arcs_for_plain_topics(problem: dict[str, Any]) -> None:
    """For topics without joins or partition racks (every group plain), the count the estimate
    uses is at least the arcs the flow routes units over."""
    problem = {k: v for k, v in problem.items() if k != "partition_racks"}
    index = index_consumer_problem(ConsumerProblem.model_validate(problem))
    weights = _uniform_unit_weights(index)
    assert weights is not None
    model = ConsumerFlowModel(index, build_classes(index), weights)
    tails = model._routing_arcs(Weights(balance=1, moves=1, racks=1))[0]
    assert len(tails) <= network_arcs(index)


def _busy_cpu(seconds: float) -> None:
    """Spend about `seconds` of this process's CPU time."""
    until = time.process_time() + seconds
    while time.process_time() < until:
        pass


def test_the_pace_is_wall_seconds_per_cpu_second_since_the_start() -> None:
    """A process that ran its CPU time in a fifteenth of the wall time it had (others on its
    core) runs at a slowdown of about 15; too little CPU time to tell gives the assumed one; it
    is never below 1."""
    assert RunningPace.start().slowdown() == UNMEASURED_SLOWDOWN
    _busy_cpu(0.02)
    pace = RunningPace(wall=time.monotonic() - 0.3, cpu=time.process_time() - 0.02)
    assert 14 < pace.slowdown() < 20
    pace = RunningPace.start()
    _busy_cpu(MIN_MEASURED_CPU_S * 5)
    assert pace.slowdown() >= 1.0
    assert RunningPace(wall=time.monotonic(), cpu=time.process_time() - 0.02).slowdown() == 1.0


def test_the_estimate_counts_units_as_well_as_arcs_and_scales_with_the_pace() -> None:
    """Measured: 200k partitions x 100 members (5,400 arcs) took longer than 5,400 arcs alone
    explain; the units' part is there. A process at half a core gets twice the time."""
    assert optimal_flow_s(5_400, 200_000) > optimal_flow_s(5_400, 0)
    assert optimal_flow_s(5_400, 200_000, slowdown=2.0) == pytest.approx(2 * optimal_flow_s(5_400, 200_000))
    assert optimal_flow_s(5_400, 200_000, slowdown=0.5) == optimal_flow_s(5_400, 200_000)  # never below quiet
    assert answer_after_flow_s(100_000, 2.0) == pytest.approx(2 * answer_after_flow_s(100_000))


def test_a_slowly_running_process_does_not_start_a_flow_that_would_fit_a_quiet_one() -> None:
    """The same network and time left: at this process's own pace the estimate fits; at a pace
    of a tenth of a core (wall ten times the CPU time since the start) it does not, and the reason
    names the pace."""
    index = index_consumer_problem(ConsumerProblem.model_validate(UNEQUAL))
    arcs = network_arcs(index)
    quiet = optimal_flow_s(arcs, network_units(index))
    _busy_cpu(0.01)
    now_wall, now_cpu = time.monotonic(), time.process_time()
    deadline = now_wall + 4 * quiet
    assert _late_estimate(index, arcs, deadline, RunningPace(now_wall - 0.012, now_cpu - 0.01)) is None
    late = _late_estimate(index, arcs, deadline, RunningPace(now_wall - 0.1, now_cpu - 0.01))
    assert late is not None and "estimated at" in late and "x wall per CPU second" in late


def test_the_time_kept_for_the_answer_grows_with_the_pace() -> None:
    """A general request's optimal solver stops earlier in a slowly running process, keeping the
    answer's measured cost at that pace; a tiny group (no pace) keeps twice the fixed rate."""
    budget = TimeBudget.of_ms(1_000)  # 1M partitions: the answer's reserve binds, not the 80% share
    _busy_cpu(0.01)
    now_wall, now_cpu = time.monotonic(), time.process_time()
    quick = _optimal_deadline(budget, 1_000_000, RunningPace(now_wall - 0.01, now_cpu - 0.01))
    slow = _optimal_deadline(budget, 1_000_000, RunningPace(now_wall - 0.04, now_cpu - 0.01))
    assert budget.deadline - slow > budget.deadline - quick >= answer_after_flow_s(1_000_000)
    assert budget.deadline - slow >= answer_after_flow_s(1_000_000, 3.5)
    tiny_reserve = 2 * stickyd.solvers.consumer.dispatch.ANSWER_S_PER_PARTITION * 1_000_000
    assert budget.deadline - _optimal_deadline(budget, 1_000_000) == pytest.approx(tiny_reserve)


def test_a_compact_answer_keeps_its_own_smaller_reserve() -> None:
    """The plug-in's compact answer costs a fraction of the JSON one after the solver, so a request
    that will be answered compactly lets its optimal solver run longer; at a tight limit at 1M
    partitions only the compact reserve leaves it any time at all."""
    budget = TimeBudget.of_ms(400)
    pace = RunningPace(time.monotonic(), time.process_time())
    json_deadline = _optimal_deadline(budget, 1_000_000, pace)
    compact_deadline = _optimal_deadline(budget, 1_000_000, pace, compact_answer=True)
    assert json_deadline <= time.monotonic()  # the JSON answer's reserve takes the whole limit
    assert compact_deadline > time.monotonic() + 0.1
    kept = answer_after_flow_s(1_000_000, UNMEASURED_SLOWDOWN, compact=True)
    assert budget.deadline - compact_deadline == pytest.approx(kept)  # the reserve binds, not the share


# cooperative: past the tiny path; 15 partitions over 3 members, 5 each: m1 gives up two of a to m3
EVEN_AT_BOUND: dict[str, Any] = {
    "topics": {"a": 6, "b": 3, "c": 6},
    "members": [
        {"id": "m1", "topics": ["a", "b"], "owned": {"a": [0, 1, 2, 3], "b": [0, 1, 2]}},
        {"id": "m2", "topics": ["b", "c"], "owned": {"c": [0, 1, 2, 3, 4]}},
        {"id": "m3", "topics": ["a", "c"], "owned": {"a": [4]}},
    ],
    "options": {"protocol": "cooperative"},
}
# m1 must give up one partition of b, which only m3 could take; m3 is even and only m2 is short
NEEDS_A_CHAIN: dict[str, Any] = {
    "topics": {"a": 3, "b": 3},
    "members": [
        {"id": "m1", "topics": ["a", "b"], "owned": {"b": [0, 1, 2]}},
        {"id": "m2", "topics": ["a"], "owned": {"a": [0]}},
        {"id": "m3", "topics": ["a", "b"], "owned": {"a": [1, 2]}},
    ],
    "options": {"protocol": "cooperative"},
}


def _full_flow_late_even_split_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_min_cost_flow(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the min-cost flow ran although its estimate did not fit")

    monkeypatch.setattr(stickyd.solvers.consumer.dispatch, "solve_min_cost_flow", no_min_cost_flow)
    monkeypatch.setattr(stickyd.solvers.consumer.flow_estimate, "FLOW_S_PER_ARC", 3600.0)
    monkeypatch.setattr(stickyd.solvers.consumer.dispatch, "EVEN_AT_BOUND_SHARE_OF_FLOW", 1e-7)


def test_where_the_full_flow_would_be_late_the_even_split_at_the_bound_answers_proven(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The min-cost flow is estimated past the time left, but the max flow at the moves' bound fits:
    it answers, proven optimal, with the moves and loads the min-cost flow gives."""
    full = solve_consumer(EVEN_AT_BOUND, budget=TimeBudget.of_ms(10_000))
    _full_flow_late_even_split_in_time(monkeypatch)
    solution = solve_consumer(EVEN_AT_BOUND, budget=TimeBudget.of_ms(10_000))
    stats = solution.stats
    assert stats.optimal and not stats.fallback and stats.solver == "min-cost-flow"
    assert (stats.moves, stats.min_load, stats.max_load) == (full.stats.moves, 5, 5) == (2, 5, 5)
    assert full.stats.optimal
    assert_valid(EVEN_AT_BOUND, solution)


def test_where_no_even_split_meets_the_bound_the_late_flow_still_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    _full_flow_late_even_split_in_time(monkeypatch)
    solution = solve_consumer(NEEDS_A_CHAIN, budget=TimeBudget.of_ms(10_000))
    assert solution.stats.fallback and not solution.stats.optimal
    assert any("the optimal solver was not started" in w for w in solution.stats.warnings)
    assert_valid(NEEDS_A_CHAIN, solution)


def test_the_even_split_is_not_tried_when_its_estimate_does_not_fit_either(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_model(*_args: object) -> None:
        raise AssertionError("the even split's classes were built although its estimate did not fit")

    monkeypatch.setattr(stickyd.solvers.consumer.dispatch, "build_classes", no_model)
    monkeypatch.setattr(stickyd.solvers.consumer.flow_estimate, "FLOW_S_PER_ARC", 3600.0)
    solution = solve_consumer(EVEN_AT_BOUND, budget=TimeBudget.of_ms(10_000))
    assert solution.stats.fallback
    assert_valid(EVEN_AT_BOUND, solution)
