"""The Streams answer as bytes (solvers/streams/result.py `streams_answer_json`, what a solver
process sends) is the model's own JSON byte for byte, whichever solver answered; and the answer
built from the index's columns (warm-ups, standby moves, balance) passes the shared validator."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from bench.limit_cases import streams_problem
from stickyd.models.streams.problem import StreamsProblem
from stickyd.models.streams.validation import validate_streams_solution
from stickyd.solvers import solve_streams
from stickyd.solvers.budget import TimeBudget
from stickyd.solvers.streams.result import _by_client, _with_clients_redone, streams_answer_json


def _racked(problem: dict[str, Any]) -> dict[str, Any]:
    clients = [{**c, "rack": f"r{j % 3}", "capacity": 1 + j % 2} for j, c in enumerate(problem["clients"])]
    return {
        **problem,
        "clients": clients,
        "subtopologies": [*problem["subtopologies"], {"id": 'x"y\\z', "partitions": 3}],
    }


@pytest.mark.parametrize(
    ("problem", "strategy", "budget"),
    [
        (streams_problem(2_000, 20), "optimal", None),
        (streams_problem(2_000, 20), "sticky", None),
        (streams_problem(2_000, 20), "greedy", None),
        (streams_problem(2_000, 20), "optimal", TimeBudget(0.0)),
        (_racked(streams_problem(600, 12)), "optimal", None),
        (_racked(streams_problem(600, 12)), "optimal", TimeBudget(0.0)),
    ],
    ids=["optimal", "sticky", "greedy", "quick-fill", "racks-capacities-odd-ids", "racks-quick-fill"],
)
def test_the_answer_bytes_are_the_models_json_and_the_answer_is_valid(
    problem: dict[str, Any], strategy: str, budget: TimeBudget | None
) -> None:
    solution = solve_streams({**problem, "options": {"strategy": strategy}}, budget=budget)
    solution.stats.warnings.append('a "quoted" warning, with a tab\t and é')
    assert streams_answer_json(solution) == solution.model_dump_json().encode()
    solution.stats.warnings.pop()
    assert validate_streams_solution(StreamsProblem.model_validate(problem), solution) == []


def test_warm_ups_keep_caught_up_work_running_where_the_target_owner_is_not_caught_up() -> None:
    """A client that left: its tasks' new owners are not caught up, their standby clients are;
    the answer keeps them running there (KIP-441) up to max_warmup_replicas warm-ups."""
    problem = streams_problem(2_000, 20)
    solution = solve_streams(problem, budget=TimeBudget(0.0))
    assert solution.followup_rebalance
    assert 0 < solution.stats.warmups <= problem["config"]["max_warmup_replicas"]
    assert validate_streams_solution(StreamsProblem.model_validate(problem), solution) == []


@pytest.mark.parametrize("seed", range(5))
def test_lists_redone_for_the_touched_clients_alone_equal_lists_built_from_scratch(seed: int) -> None:
    """What runs now is built from the target's per-client lists, redoing only the clients whose
    pairs changed (solvers/streams/result.py): the same lists as grouping every pair anew."""
    rng = np.random.default_rng(seed)
    n, tasks = 30, np.arange(400, dtype=np.int64)
    names = tuple(f"s_{t}" for t in tasks)
    target = rng.integers(0, n, len(tasks))
    running = target.copy()
    moved = rng.choice(len(tasks), size=25, replace=False)
    running[moved] = rng.integers(0, n, len(moved))
    changed = np.flatnonzero(running != target)
    touched = np.concatenate([running[changed], target[changed]])
    base = _by_client(names, n, target, tasks)
    redone = _with_clients_redone(names, n, base, running, tasks, touched)
    assert redone == _by_client(names, n, running, tasks)
    assert base == _by_client(names, n, target, tasks)  # the target's lists are left as they were
    kept = rng.random(len(tasks)) < 0.9  # dropping pairs: the clients of the dropped ones are redone
    dropped = _with_clients_redone(names, n, base, target[kept], tasks[kept], target[~kept])
    assert dropped == _by_client(names, n, target[kept], tasks[kept])
