"""Streams moves weighed by what they cost to restore (`options.stickiness: restore_cost`,
`task_costs`): balance first as before, then the least summed cost of the stateful actives that
move, then of the standby replicas that move. Whenever `stats.optimal` is claimed, both figures
equal the independent CP-SAT reference's (tests/solvers/streams/reference.py)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stickyd.models.streams.problem import MAX_TASK_COST, StreamsProblem
from stickyd.models.streams.validation import validate_streams_solution
from stickyd.solvers import solve_streams
from tests.record_answers import streams_request
from tests.solvers.streams.reference import reference_streams
from tests.solvers.streams.test_proofs import EVENTS, scenario

COSTS = [0, 1, 1, 2, 7, 40, 1_000, 10**9]


def costed(seed: int, event: str) -> dict[str, Any]:
    """test_proofs' event scenario with restore costs on most stateful tasks (the others cost 1)."""
    problem = scenario(seed, event)
    rng = random.Random(f"costs-{event}-{seed}")
    task_costs = {
        f"{s['id']}_{p}": rng.choice(COSTS)
        for s in problem["subtopologies"]
        for p in range(s["partitions"])
        if rng.random() < 0.8
    }
    return {**problem, "task_costs": task_costs, "options": {"stickiness": "restore_cost"}}


def solved(problem: dict[str, Any]) -> Any:
    solution = solve_streams(problem)
    assert validate_streams_solution(StreamsProblem.model_validate(problem), solution) == []
    return solution


def figures(solution: Any) -> dict[str, int]:
    return {"active_move_cost": solution.stats.active_move_cost, "standby_move_cost": solution.stats.standby_move_cost}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.sampled_from(EVENTS))
def test_every_weighed_level_equals_the_reference_whenever_optimal_is_claimed(seed: int, event: str) -> None:
    problem = costed(seed, event)
    solution = solved(problem)
    want = reference_streams(problem)
    if solution.stats.optimal and want is not None:
        assert figures(solution) == want, (seed, event, solution.stats.warnings)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_arbitrary_claims_and_costs_up_to_the_largest_give_valid_answers_true_to_the_reference(
    rng: random.Random,
) -> None:
    """Claims at random (tasks claimed twice, standbys beside actives, lags), costs from 0 to
    10^15: always a valid answer, and every claimed optimum is the reference's."""
    problem = streams_request(rng)
    tasks = [f"{s['id']}_{p}" for s in problem["subtopologies"] for p in range(s["partitions"])]
    choices = [0, 1, 2, 100, 10**6, MAX_TASK_COST]
    problem["task_costs"] = {t: rng.choice(choices) for t in tasks if rng.random() < 0.8}
    problem["options"] = {"stickiness": "restore_cost"}
    solution = solved(problem)
    want = reference_streams(problem)
    if solution.stats.optimal and want is not None:
        assert figures(solution) == want, solution.stats.warnings


PROVEN_SHARE = 0.95
"""The share proven for every event type (all 40 cases of each are, on these seeds)."""
CASES = 40


@pytest.mark.parametrize("event", EVENTS)
def test_weighed_optimal_is_proven_on_most_cases_and_true_when_claimed(event: str) -> None:
    """The certificate (flow relaxations, the linear programme, the integer programme on task
    classes) carries over to weighed levels: most answers are proven, each claim is the reference's."""
    proven = 0
    for seed in range(CASES):
        problem = costed(seed, event)
        solution = solved(problem)
        if not solution.stats.optimal:
            continue
        proven += 1
        want = reference_streams(problem)
        if want is not None:
            assert figures(solution) == want, (seed, solution.stats.warnings)
    assert proven >= PROVEN_SHARE * CASES, f"{event}: {proven} of {CASES} proven"


BALANCE_FORCES_ONE_MOVE: dict[str, Any] = {
    "subtopologies": [{"id": "0", "partitions": 4, "stateful": True}],
    "clients": [{"id": "a", "active": ["0_0", "0_1", "0_2"]}, {"id": "b", "active": ["0_3"]}],
    "task_costs": {"0_0": 100, "0_1": 5, "0_2": 1_000},
    "options": {"stickiness": "restore_cost"},
}


def test_the_cheap_task_moves_where_balance_forces_one_move() -> None:
    solution = solved(BALANCE_FORCES_ONE_MOVE)
    assert solution.target["b"].active == ["0_1", "0_3"]
    assert (solution.stats.active_moves, solution.stats.active_move_cost, solution.stats.optimal) == (1, 5, True)


def test_the_sticky_heuristic_sheds_the_cheap_task_too() -> None:
    """The heuristic (also the fallback) keeps the costliest tasks on their owners first."""
    solution = solved({**BALANCE_FORCES_ONE_MOVE, "options": {"stickiness": "restore_cost", "strategy": "sticky"}})
    assert solution.target["b"].active == ["0_1", "0_3"]
    assert (solution.stats.solver, solution.stats.active_move_cost) == ("sticky", 5)


def test_a_free_task_moves_before_any_other() -> None:
    problem = {**BALANCE_FORCES_ONE_MOVE, "task_costs": {"0_0": 0, "0_1": 5, "0_2": 3}}
    solution = solved(problem)
    assert solution.target["b"].active == ["0_0", "0_3"]
    assert (solution.stats.active_move_cost, solution.stats.optimal) == (0, True)


def test_the_cheap_task_of_a_subtopology_moves() -> None:
    """The shares move two tasks of subtopology 0 (50 each) and one of subtopology 1 to b: its
    cheap task (1), not its costly one (1,000)."""
    problem = {
        "subtopologies": [
            {"id": "0", "partitions": 4, "stateful": True},
            {"id": "1", "partitions": 2, "stateful": True},
        ],
        "clients": [{"id": "a", "active": ["0_0", "0_1", "0_2", "0_3", "1_0", "1_1"]}, {"id": "b"}],
        "task_costs": {"0_0": 50, "0_1": 50, "0_2": 50, "0_3": 50, "1_0": 1, "1_1": 1_000},
        "options": {"stickiness": "restore_cost"},
    }
    solution = solved(problem)
    assert reference_streams(problem) == figures(solution)
    assert figures(solution) == {"active_move_cost": 101, "standby_move_cost": 0}
    assert solution.stats.optimal


def test_the_cheap_standby_moves_where_balance_forces_one_standby_move() -> None:
    """Three clients, one replica: a joins with nothing; of b's two previous standbys (every
    task is stateful) one must go to make room, and it is the cheap one."""
    problem = {
        "subtopologies": [{"id": "0", "partitions": 3, "stateful": True}],
        "clients": [
            {"id": "a"},
            {"id": "b", "active": ["0_0"], "standby": ["0_1", "0_2"]},
            {"id": "c", "active": ["0_1", "0_2"], "standby": ["0_0"]},
        ],
        "config": {"num_standby_replicas": 1},
        "task_costs": {"0_1": 900, "0_2": 3},
        "options": {"stickiness": "restore_cost"},
    }
    solution = solved(problem)
    assert figures(solution) == reference_streams(problem)
    assert solution.stats.optimal
    counted = solved({**problem, "options": {}})
    assert reference_streams({**problem, "options": {}}) == {
        "active_moves": counted.stats.active_moves,
        "standby_moves": counted.stats.standby_moves,
    }


def test_the_cost_figures_appear_only_with_restore_cost() -> None:
    counted = solve_streams({**BALANCE_FORCES_ONE_MOVE, "options": {}})
    dumped = counted.model_dump()["stats"]
    assert "active_move_cost" not in dumped and "standby_move_cost" not in dumped
    assert any("task_costs ignored" in w for w in counted.stats.warnings)
    weighed = solve_streams(BALANCE_FORCES_ONE_MOVE).model_dump()["stats"]
    assert (weighed["active_move_cost"], weighed["standby_move_cost"]) == (5, 0)


def test_counting_ignores_task_costs() -> None:
    """With `stickiness: tasks` (the default) the costs change nothing but a warning."""
    for seed in range(10):
        problem = costed(seed, "leave")
        counted = solve_streams({**problem, "options": {}})
        plain = solve_streams({k: v for k, v in problem.items() if k not in ("options", "task_costs")})
        assert counted.target == plain.target
        assert counted.stats.active_moves == plain.stats.active_moves


def test_costs_of_unknown_tasks_are_a_warning() -> None:
    problem = {**BALANCE_FORCES_ONE_MOVE, "task_costs": {"0_1": 5, "0_9": 3, "7_0": 1}}
    solution = solved(problem)
    assert any("2 task_costs on tasks that do not exist ignored: 0_9, 7_0" in w for w in solution.stats.warnings)


def test_the_largest_costs_are_weighed_exactly() -> None:
    """Costs up to 10^15 a task: the levels are solved one after the other (their weighted sum
    would pass 64 bits) and the sums are exact."""
    problem = {
        **BALANCE_FORCES_ONE_MOVE,
        "task_costs": {"0_0": MAX_TASK_COST, "0_1": MAX_TASK_COST - 1, "0_2": MAX_TASK_COST},
    }
    solution = solved(problem)
    assert solution.target["b"].active == ["0_1", "0_3"]
    assert (solution.stats.active_move_cost, solution.stats.optimal) == (MAX_TASK_COST - 1, True)


def test_costs_past_64_bit_flows_fall_back_to_a_valid_answer() -> None:
    """5,000 tasks at 10^15 sum past 2^62: the flows are not tried, the heuristic answers, and
    nothing is claimed optimal."""
    problem = {
        "subtopologies": [{"id": "0", "partitions": 5_000, "stateful": True}],
        "clients": [{"id": "a", "active": [f"0_{p}" for p in range(5_000)]}, {"id": "b"}],
        "task_costs": {f"0_{p}": MAX_TASK_COST for p in range(5_000)},
        "options": {"stickiness": "restore_cost", "time_limit_ms": 20_000},
    }
    solution = solved(problem)
    assert solution.stats.fallback and not solution.stats.optimal
    assert solution.stats.active_move_cost == 2_500 * MAX_TASK_COST
