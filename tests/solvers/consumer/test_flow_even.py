"""The balanced optimum as an even split (solvers/consumer/flow.py `_even_split`): a flow that costs
moves and rack misses only, every member held to the even share or one more, gives the same optimum
as the lexicographic weights' (balance, then moves, then rack misses) whenever such bounds can be
met; when they cannot, the lexicographic flow answers. (It applies from EVEN_FIRST_MIN_UNITS units;
these tests lower that to 0.)"""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

import stickyd.solvers.consumer.flow
from stickyd.models import ConsumerProblem, index_consumer_problem
from stickyd.solvers.consumer.classes import build_classes
from stickyd.solvers.consumer.dispatch import _uniform_unit_weights
from stickyd.solvers.consumer.flow import solve_min_cost_flow
from stickyd.solvers.consumer.result import build_solution
from stickyd.solvers.outcome import Outcome
from tests.conftest import assert_valid
from tests.solvers.consumer.test_properties import _rack_misses, _squares, consumer_problems


def _flow(problem: dict[str, Any]) -> tuple[int, int, int] | None:
    """(sum of squared loads, moves, rack misses) of the flow's answer; None when the flow does not
    apply (mixed unit weights)."""
    model = ConsumerProblem.model_validate(problem)
    index = index_consumer_problem(model)
    weights = _uniform_unit_weights(index)
    if weights is None:
        return None
    answer = solve_min_cost_flow(index, build_classes(index), weights, max_imbalance=0, deadline=time.monotonic() + 60)
    solution = build_solution(
        model, index, answer.owners, Outcome(strategy="optimal", solver="min-cost-flow", optimal=True), 0.0
    )
    assert_valid(model, solution)
    return _squares(solution), solution.stats.moves, _rack_misses(problem, solution)


@pytest.fixture(autouse=True)
def _every_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stickyd.solvers.consumer.flow, "EVEN_FIRST_MIN_UNITS", 0)


def _without_shortcut(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stickyd.solvers.consumer.flow, "_even_split", lambda *_args: None)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(consumer_problems(max_partitions=8))
def test_the_even_split_gives_the_lexicographic_optimum(
    monkeypatch: pytest.MonkeyPatch, problem: dict[str, Any]
) -> None:
    with monkeypatch.context() as patched:
        fast = _flow(problem)
        _without_shortcut(patched)
        full = _flow(problem)
    assert fast == full


def test_loads_that_cannot_be_even_are_left_to_the_lexicographic_flow() -> None:
    """Every member could take the even share (4 of 16), but the two on topic a share its 4
    partitions: no assignment holds every member to 4 or 5, so the even split does not answer."""
    problem: dict[str, Any] = {
        "topics": {"a": 4, "b": 12},
        "members": [
            {"id": "m1", "topics": ["a"], "owned": {"a": [0, 1]}},
            {"id": "m2", "topics": ["a"]},
            {"id": "m3", "topics": ["b"], "owned": {"b": [0, 1, 2, 3, 4, 5, 6, 7, 8]}},
            {"id": "m4", "topics": ["b"]},
        ],
    }
    index = index_consumer_problem(ConsumerProblem.model_validate(problem))
    weights = _uniform_unit_weights(index)
    assert weights is not None
    model = stickyd.solvers.consumer.flow.ConsumerFlowModel(index, build_classes(index), weights)
    n = index.member_count
    assert (model.capacity >= 4).all()
    assert stickyd.solvers.consumer.flow._even_split(model, 0, time.monotonic() + 60) is None
    answer = solve_min_cost_flow(index, build_classes(index), weights, max_imbalance=0, deadline=time.monotonic() + 60)
    assert sorted(answer.loads.tolist()) == [2, 2, 6, 6] and n == 4


def test_an_even_split_answers_where_one_exists() -> None:
    problem: dict[str, Any] = {
        "topics": {"a": 6, "b": 6},
        "members": [
            {"id": "m1", "topics": ["a", "b"], "owned": {"a": [0, 1, 2, 3, 4, 5]}},
            {"id": "m2", "topics": ["b"]},
            {"id": "m3", "topics": ["a", "b"]},
        ],
    }
    index = index_consumer_problem(ConsumerProblem.model_validate(problem))
    weights = _uniform_unit_weights(index)
    assert weights is not None
    model = stickyd.solvers.consumer.flow.ConsumerFlowModel(index, build_classes(index), weights)
    answer = stickyd.solvers.consumer.flow._even_split(model, 0, time.monotonic() + 60)
    assert answer is not None and sorted(answer.loads.tolist()) == [4, 4, 4]
