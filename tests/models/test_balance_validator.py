"""The validator shown wrong answers for balance `load` and `per_topic`: each test breaks a correct
answer in exactly one way and asserts that `validate_consumer_solution` names it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from stickyd.models import ConsumerProblem, ConsumerSolution, validate_consumer_solution
from stickyd.solvers import solve_consumer
from tests.conftest import load_example


def _answer(name: str, **options: Any) -> tuple[dict[str, Any], ConsumerSolution]:
    problem = load_example(name)
    problem["options"] = {**problem.get("options", {}), **options}
    solution = solve_consumer(problem)
    assert validate_consumer_solution(ConsumerProblem.model_validate(problem), solution) == []
    return problem, solution


def _with_load(solution: ConsumerSolution, **figures: Any) -> ConsumerSolution:
    assert solution.stats.load is not None
    load = solution.stats.load.model_copy(update=figures)
    return solution.model_copy(update={"stats": solution.stats.model_copy(update={"load": load})})


def _violations(problem: dict[str, Any], solution: ConsumerSolution) -> str:
    return " | ".join(validate_consumer_solution(ConsumerProblem.model_validate(problem), solution))


@pytest.mark.parametrize(
    ("figures", "named"),
    [
        ({"max": 460.0}, "stats.load.max"),
        ({"min": 300.0}, "stats.load.min"),
        ({"lower_bound": 500.0}, "stats.load.lower_bound"),
        ({"moves_lower_bound": 3}, "stats.load.moves_lower_bound"),
    ],
)
def test_load_figures_that_the_assignment_does_not_have_are_named(figures: dict[str, Any], named: str) -> None:
    """stats.load's max and min are measured on the assignment; its bounds never exceed the answer."""
    problem, solution = _answer("consumer-load-hot-partition.json")
    assert named in _violations(problem, _with_load(solution, **figures))


def test_an_optimal_load_answer_above_the_tolerated_bottleneck_is_named() -> None:
    """optimal: the bottleneck 470 is above (1 + 0.05) x 440."""
    problem, solution = _answer("consumer-load-hot-partition.json")
    assert "is above (1 + load_tolerance) x lower_bound" in _violations(
        problem, _with_load(solution, lower_bound=440.0)
    )


def test_an_optimal_load_answer_with_unproven_moves_is_named() -> None:
    """optimal: the moves equal their proven lower bound."""
    problem, solution = _answer("consumer-load-strict.json")
    assert solution.stats.moves == 1
    assert "not proven" in _violations(problem, _with_load(solution, moves_lower_bound=0))


def test_an_optimal_load_answer_without_its_bounds_is_named() -> None:
    problem, solution = _answer("consumer-load-hot-partition.json")
    assert "gives its proven lower_bound" in _violations(problem, _with_load(solution, lower_bound=None))


def test_a_load_answer_without_stats_load_is_named() -> None:
    problem, solution = _answer("consumer-load-hot-partition.json")
    broken = solution.model_copy(update={"stats": solution.stats.model_copy(update={"load": None})})
    assert "stats.load: missing" in _violations(problem, broken)


def test_a_count_answer_with_stats_load_is_named() -> None:
    """Only balance load reports stats.load."""
    problem, solution = _answer("consumer-load-hot-partition.json")
    count = copy.deepcopy(problem)
    count["options"]["balance"] = "count"
    assert "only balance load reports it" in _violations(count, solution)


def test_an_optimal_per_topic_answer_with_a_topic_unevenly_spread_is_named() -> None:
    """per_topic level 1: a claimed-optimal answer gives each member floor/ceil of every topic."""
    problem, solution = _answer("consumer-per-topic-join.json")
    assignment = copy.deepcopy(solution.assignment)
    # two of hot's three partitions on one member, cold's spread to keep the totals 2/2/2
    a, b = assignment["a"], assignment["b"]
    a["hot"], b["hot"] = sorted(a["hot"] + b["hot"]), []
    b["cold"], a["cold"] = sorted(a["cold"] + b["cold"]), []
    broken = solution.model_copy(update={"assignment": assignment})
    assert "optimal per_topic answer gives members 0 to 2 units, not 1 to 1" in _violations(problem, broken)
