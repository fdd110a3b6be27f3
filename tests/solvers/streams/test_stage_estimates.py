"""The Streams dispatcher skips a stage that cannot finish in time: before the flows and before the
sticky heuristic it compares the stage's estimate from the problem's size
(solvers/streams/stage_estimates.py) with what is left, and a stage that does not fit is not started (the
quick valid fill answers, inside the same call), saying so in `warnings`."""

from __future__ import annotations

from typing import Any

import pytest

from bench.limit_cases import streams_problem
from stickyd.models.streams.index import index_streams_problem
from stickyd.models.streams.problem import StreamsProblem
from stickyd.models.streams.validation import validate_streams_solution
from stickyd.solvers import solve_streams
from stickyd.solvers.budget import TimeBudget
from stickyd.solvers.streams import dispatch
from stickyd.solvers.streams.dispatch import OPTIMAL_SHARE
from stickyd.solvers.streams.stage_estimates import answer_s, flows_s, sticky_s


@pytest.fixture(scope="module")
def wide() -> dict[str, Any]:
    """20k tasks x 1,000 clients: the flows are estimated at about 1 s, the sticky heuristic at 0.3 s."""
    return streams_problem(20_000, 1_000)


def test_the_estimates_grow_with_the_tasks_and_the_clients(wide: dict[str, Any]) -> None:
    small = index_streams_problem(StreamsProblem.model_validate(streams_problem(2_000, 20)))
    large = index_streams_problem(StreamsProblem.model_validate(wide))
    assert flows_s(large) > 1.0 > flows_s(small)
    assert sticky_s(large) > sticky_s(small) > 0
    assert answer_s(large) > answer_s(small) > 0


def test_flows_and_heuristic_that_do_not_fit_are_skipped_for_the_quick_fill(wide: dict[str, Any]) -> None:
    """With 150 ms left, neither the flows (~1 s) nor the heuristic (~0.3 s) start: the quick fill
    answers, fallback true, each skip named with its estimate, and the metrics read it as the
    time limit."""
    solution = solve_streams(wide, budget=TimeBudget.of_ms(150))
    stats = solution.stats
    assert (stats.solver, stats.fallback, stats.optimal) == ("quick-fill", True, False)
    assert stats.warnings[0].startswith("fell back to the sticky heuristic: the streams active flow skipped: estimated")
    assert "20000 tasks x 1000 clients" in stats.warnings[0]
    assert stats.warnings[1].startswith("the sticky heuristic skipped: estimated")
    assert stats.warnings[1].endswith("quick valid fill")
    assert stats.fallback_cause == "solver-time-limit"
    assert validate_streams_solution(StreamsProblem.model_validate(wide), solution) == []


def test_the_heuristic_runs_where_it_fits_though_the_flows_do_not(
    wide: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flows estimated 10x their real estimate (as on a machine that much slower) do not fit in
    their share (80%) of 10 s, and the heuristic (~0.4 s with its answer) keeps seconds of slack:
    the dispatcher skips the flows for the heuristic, not for the quick fill, however the host
    stalls."""
    problem = StreamsProblem.model_validate({**wide, "options": {"time_limit_ms": 10_000}})
    index = index_streams_problem(problem)
    monkeypatch.setattr(dispatch, "flows_s", lambda index: 10 * flows_s(index))
    assert 10 * flows_s(index) > OPTIMAL_SHARE * 10 and sticky_s(index) + answer_s(index) < 0.5
    solution = solve_streams(problem)
    stats = solution.stats
    assert (stats.solver, stats.fallback) == ("sticky", True)
    assert "the streams active flow skipped: estimated" in stats.warnings[0]
    assert not any("sticky heuristic skipped" in w for w in stats.warnings)


def test_a_problem_the_flows_fit_is_still_solved_optimally_with_a_generous_limit() -> None:
    solution = solve_streams({**streams_problem(10_000, 100), "options": {"time_limit_ms": 10_000}})
    assert (solution.stats.solver, solution.stats.optimal, solution.stats.fallback) == ("min-cost-flow", True, False)
