"""Streams `stats.optimal` per event type: from a balanced target with caught-up standbys, one
event (a join, a leave, a scale-out, a restart that lost its state, racks, unequal capacities);
the answer is proven optimal on at least 99% of the cases of every event type, and whenever it
says so, every level equals the independent CP-SAT reference."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stickyd.models.streams.problem import StreamsProblem
from stickyd.models.streams.validation import validate_streams_solution
from stickyd.solvers import solve_streams
from tests.solvers.streams.reference import reference_streams

EVENTS = ["join", "leave", "scale-out", "restart", "racks", "unequal capacities"]
CASES = 100
PROVEN_SHARE = 0.99
"""The share of cases proven optimal, for every event (the flow relaxations and the linear programme alone
left a leave at 96 of these 100: one standby move of gap when the leaving client's standbys are
re-homed; the integer programme on task classes closes it)."""


def scenario(seed: int, event: str) -> dict[str, Any]:
    rng = random.Random(f"{event}-{seed}")
    subtopologies = [
        {"id": str(s), "partitions": rng.randint(2, 6), "stateful": rng.random() < 0.7}
        for s in range(rng.randint(1, 3))
    ]
    config = {
        "num_standby_replicas": rng.choice([0, 1, 1, 2]),
        "max_warmup_replicas": 2,
        "acceptable_recovery_lag": 100,
    }
    n = rng.randint(3, 6)
    clients: list[dict[str, Any]] = [{"id": f"c{j}"} for j in range(n)]
    if event == "unequal capacities":
        for client in clients:
            client["capacity"] = rng.choice([1, 1, 2, 3])
    if event == "racks":
        for j, client in enumerate(clients):
            client["rack"] = f"r{j % 2}"
    before = solve_streams({"subtopologies": subtopologies, "clients": clients, "config": config}).target
    after = [
        {**c, "active": before[c["id"]].active, "standby": before[c["id"]].standby}
        | {"lags": dict.fromkeys(before[c["id"]].standby, rng.choice([0, 50, 500]))}
        for c in clients
    ]
    if event in ("join", "racks", "unequal capacities"):
        after.append({"id": "new", "rack": "r1"} if event == "racks" else {"id": "new"})
    elif event == "leave":
        after.pop(rng.randrange(len(after)))
    elif event == "scale-out":
        after += [{"id": f"new{j}"} for j in range(max(1, n // 2))]
    else:
        lost = rng.randrange(len(after))
        after[lost] = {"id": after[lost]["id"]}
    return {"subtopologies": subtopologies, "clients": after, "config": config}


@pytest.mark.parametrize("event", EVENTS)
def test_optimal_is_proven_on_99_percent_of_every_event_and_true_when_claimed(event: str) -> None:
    proven = 0
    for seed in range(CASES):
        problem = scenario(seed, event)
        solution = solve_streams(problem)
        assert validate_streams_solution(StreamsProblem.model_validate(problem), solution) == []
        if not solution.stats.optimal:
            continue
        proven += 1
        want = reference_streams(problem)
        if want is not None:  # (None: no target meets every balance; the reference minimises no excess)
            got = {"active_moves": solution.stats.active_moves, "standby_moves": solution.stats.standby_moves}
            assert got == want, (seed, solution.stats.warnings)
    assert proven >= PROVEN_SHARE * CASES, f"{event}: {proven} of {CASES} proven"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.sampled_from(EVENTS))
def test_every_level_equals_the_reference_whenever_optimal_is_claimed(seed: int, event: str) -> None:
    """Hypothesis over the same event scenarios: a claimed optimum is the CP-SAT reference's."""
    problem = scenario(seed, event)
    solution = solve_streams(problem)
    assert validate_streams_solution(StreamsProblem.model_validate(problem), solution) == []
    want = reference_streams(problem)
    if solution.stats.optimal and want is not None:
        got = {"active_moves": solution.stats.active_moves, "standby_moves": solution.stats.standby_moves}
        assert got == want, (seed, event, solution.stats.warnings)


def test_a_flow_target_that_moves_a_standby_too_many_is_replaced_by_the_integer_programmes() -> None:
    """Leave case 258: the two flows move one standby where none needs to move; the integer
    programme on task classes finds the target that keeps it, and that target is answered."""
    problem = scenario(258, "leave")
    solution = solve_streams(problem)
    assert validate_streams_solution(StreamsProblem.model_validate(problem), solution) == []
    assert reference_streams(problem) == {"active_moves": 0, "standby_moves": 0}
    assert (solution.stats.solver, solution.stats.optimal, solution.stats.standby_moves) == ("cp-sat", True, 0)
