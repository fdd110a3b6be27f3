"""The fallback keeps its time limit: any `time_limit_ms` from 1 ms returns a valid answer, and
the quick fill used when even the KIP-54 heuristic would be late is valid by construction."""

from __future__ import annotations

import time
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stickyd.solvers import solve_consumer
from stickyd.solvers.budget import TimeBudget
from tests.conftest import assert_valid
from tests.solvers.consumer.test_properties import consumer_problems

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(
    consumer_problems(),
    st.integers(1, 2_000),
    st.sampled_from(["optimal", "sticky"]),
    st.sampled_from(["eager", "cooperative"]),
)
def test_any_time_limit_from_one_ms_returns_a_valid_answer(
    problem: dict[str, Any], limit_ms: int, strategy: str, protocol: str
) -> None:
    """Whatever the limit, the answer is valid and says whether it fell back."""
    request = {**problem, "options": {"strategy": strategy, "protocol": protocol, "time_limit_ms": limit_ms}}
    solution = solve_consumer(request)
    assert_valid(request, solution)
    assert not (solution.stats.optimal and solution.stats.fallback)


@SETTINGS
@given(consumer_problems(), st.sampled_from(["eager", "cooperative"]))
def test_a_spent_budget_answers_with_the_quick_fill_validly(problem: dict[str, Any], protocol: str) -> None:
    """With no time left, the answer is the quick fill, valid, flagged as a fallback with its reason."""
    request = {**problem, "options": {"protocol": protocol}}
    solution = solve_consumer(request, budget=TimeBudget(time.monotonic()))
    assert_valid(request, solution)
    if solution.stats.solver != "direct-equal":
        assert solution.stats.solver == "quick-fill"
        assert solution.stats.fallback
        assert any("quick valid fill" in w for w in solution.stats.warnings)


def test_quick_fill_balances_fresh_unequal_members_within_one_partition_per_class() -> None:
    """Fresh members reading the same topics end up within one partition of each other."""
    problem = {
        "topics": {"a": 10, "b": 7},
        "members": [
            {"id": "x", "topics": ["a", "b"]},
            {"id": "y", "topics": ["a", "b"]},
            {"id": "z", "topics": ["a", "b"]},
            {"id": "w", "topics": ["a"], "owned": {"a": [0, 1, 2, 3, 4, 5, 6, 7]}, "generation": 1},
        ],
    }
    solution = solve_consumer(problem, budget=TimeBudget(time.monotonic()))
    assert_valid(problem, solution)
    loads = {m: sum(len(p) for p in parts.values()) for m, parts in solution.assignment.items()}
    assert loads["w"] <= 5  # its claims beyond ceil(17 / 4) = 5 are released
    assert max(loads[m] for m in "xyz") - min(loads[m] for m in "xyz") <= 1
