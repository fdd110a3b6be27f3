"""Streams keeps its deadline: the flows and the sticky heuristic ask the request's TimeBudget in
their loops and stop once it is spent, and the dispatcher then answers with the quick valid fill
(solvers/streams/quick_fill.py), valid by construction for any shape (capacities, standbys, clients
fewer than the replicas, tasks nobody owned before)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.limit_cases import streams_problem
from stickyd.models.streams.index import index_streams_problem
from stickyd.models.streams.problem import StreamsProblem
from stickyd.models.streams.validation import target_violations, validate_streams_solution
from stickyd.solvers import solve_streams
from stickyd.solvers.budget import TimeBudget
from stickyd.solvers.errors import SolveTimeout
from stickyd.solvers.streams.baselines import solve_sticky
from stickyd.solvers.streams.flow import solve_streams_flows
from stickyd.solvers.streams.quick_fill import solve_quick_streams

SPENT = TimeBudget(0.0)
"""a budget that ended long ago (the monotonic clock's origin)."""


def _index(problem: dict[str, Any]) -> Any:
    return index_streams_problem(StreamsProblem.model_validate(problem))


@pytest.mark.parametrize("strategy", ["optimal", "sticky"])
def test_a_spent_budget_is_answered_by_the_quick_fill_without_running_the_flows_or_the_heuristic(
    strategy: str,
) -> None:
    problem = {**streams_problem(2_000, 20), "options": {"strategy": strategy}}
    solution = solve_streams(problem, budget=SPENT)
    assert (solution.stats.solver, solution.stats.fallback, solution.stats.optimal) == ("quick-fill", True, False)
    # neither is started: their estimates do not fit in the 0 ms left (tests/solvers/streams/test_stage_estimates.py)
    assert any(w.startswith("the sticky heuristic skipped: estimated") for w in solution.stats.warnings)
    assert validate_streams_solution(StreamsProblem.model_validate(problem), solution) == []


def test_the_flows_and_the_sticky_heuristic_stop_when_their_budget_is_spent() -> None:
    index = _index(streams_problem(2_000, 20))
    with pytest.raises(SolveTimeout, match="streams active flow"):
        solve_streams_flows(index, SPENT)
    with pytest.raises(SolveTimeout, match="streams sticky heuristic"):
        solve_sticky(index, SPENT)


def test_a_service_fallback_keeps_the_budget_too() -> None:
    """The service's overrun path (fallback_reason) goes through the same sticky-or-quick choice."""
    problem = streams_problem(2_000, 20)
    solution = solve_streams(problem, fallback_reason="the service's time ran out", budget=SPENT)
    assert solution.stats.solver == "quick-fill"
    assert solution.stats.warnings[0] == "the service's time ran out"


@st.composite
def shapes(draw: st.DrawFn) -> dict[str, Any]:
    n_subs = draw(st.integers(1, 4))
    sizes = [draw(st.integers(0, 12)) for _ in range(n_subs)]
    subs = [{"id": str(s), "partitions": size, "stateful": draw(st.booleans())} for s, size in enumerate(sizes)]
    n = draw(st.integers(1, 6))
    names = [f"{s}_{p}" for s, size in enumerate(sizes) for p in range(size)]
    clients = []
    for j in range(n):
        owned = draw(st.lists(st.sampled_from(names), max_size=6, unique=True)) if names else []
        clients.append({"id": f"c{j}", "capacity": draw(st.integers(1, 3)), "active": owned})
    config = {"num_standby_replicas": draw(st.integers(0, 3))}
    return {"subtopologies": subs, "clients": clients, "config": config}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes())
def test_the_quick_fill_is_valid_and_within_each_clients_active_share(problem: dict[str, Any]) -> None:
    index = _index(problem)
    target = solve_quick_streams(index)
    assert target_violations(index, target.active, target.standby) == []
    lo, hi = index.active_bounds()
    counts = [int((target.active == j).sum()) for j in range(index.client_count)]
    assert all(lo[j] <= c <= hi[j] for j, c in enumerate(counts)), (counts, lo, hi)


def test_the_quick_fill_gives_a_client_its_floor_even_when_others_owned_their_ceil() -> None:
    """4 tasks over 3 clients: shares 1-2 each; two previous owners of 2 cannot both keep 2."""
    problem = {
        "subtopologies": [{"id": "0", "partitions": 4, "stateful": False}],
        "clients": [{"id": "a", "active": ["0_0", "0_1"]}, {"id": "b", "active": ["0_2", "0_3"]}, {"id": "c"}],
    }
    target = solve_quick_streams(_index(problem))
    assert sorted(int((target.active == j).sum()) for j in range(3)) == [1, 1, 2]
