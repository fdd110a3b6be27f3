"""The standby stage is exact given the actives: for the actives the flows chose, no standby
placement has less stateful excess, or as little and a smaller summed cost of moved standbys.
Checked against a plain CP-SAT model written from the request alone (one boolean per task and
client), with restore costs from 0 to 10^15 drawn with many ties."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from stickyd.models.streams.index import index_streams_problem
from stickyd.models.streams.problem import MAX_TASK_COST, StreamsProblem
from stickyd.solvers.streams.flow import solve_streams_flows
from stickyd.solvers.streams.result import standby_move_cost
from tests.record_answers import streams_request

COSTS = [0, 1, 1, 2, 1_000, 10**9, MAX_TASK_COST]


def best_standbys(problem: dict[str, Any], active: dict[str, int]) -> tuple[int, int]:
    """(least stateful excess, then least moved standby cost) over every standby placement
    beside the fixed `active` owners (task -> client position)."""
    clients = problem["clients"]
    n = len(clients)
    subs = problem["subtopologies"]
    stateful = [f"{s['id']}_{p}" for s in subs if s["stateful"] for p in range(s["partitions"])]
    replicas = min(problem["config"].get("num_standby_replicas", 0), n - 1)
    caps = [c.get("capacity", 1) for c in clients]
    total = len(stateful) * (1 + replicas)
    lo = [total * c // sum(caps) for c in caps]
    hi = [-(-total * c // sum(caps)) for c in caps]
    costs = problem.get("task_costs", {})
    owners: dict[str, list[int]] = {}
    for j, c in enumerate(clients):
        for name in c.get("active", []):
            owners.setdefault(name, []).append(j)
    model = cp_model.CpModel()
    s = {(t, j): model.new_bool_var(f"s{t}{j}") for t in stateful for j in range(n)}
    for t in stateful:
        model.add(sum(s[t, j] for j in range(n)) == replicas)
        model.add(s[t, active[t]] == 0)
    excess = []
    for j in range(n):
        held = sum(s[t, j] for t in stateful) + sum(1 for t in stateful if active[t] == j)
        over = model.new_int_var(0, total, f"e{j}")
        model.add(over >= lo[j] - held)
        model.add(over >= held - hi[j])
        excess.append(over)
    # a previous standby (not beside its task's single previous active) moves unless its client
    # holds the task in either role
    moved = []
    for j, c in enumerate(clients):
        for t in set(c.get("standby", [])) & set(stateful):
            if owners.get(t) == [j]:
                continue
            if active[t] != j:
                moved.append(int(costs.get(t, 1)) * (1 - s[t, j]))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    figures = []
    for objective in (sum(excess), sum(moved)):
        model.minimize(objective)
        assert solver.solve(model) == cp_model.OPTIMAL
        figures.append(round(solver.objective_value))
        model.add(objective == figures[-1])
    return figures[0], figures[1]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_the_standbys_are_optimal_for_the_flows_actives_with_costs_up_to_the_largest(rng: random.Random) -> None:
    problem = streams_request(rng)
    tasks = [f"{s['id']}_{p}" for s in problem["subtopologies"] for p in range(s["partitions"])]
    problem["task_costs"] = {t: rng.choice(COSTS) for t in tasks if rng.random() < 0.8}
    problem["options"] = {"stickiness": "restore_cost"}
    index = index_streams_problem(StreamsProblem.model_validate(problem))
    target = solve_streams_flows(index)
    lo, hi = index.stateful_bounds()
    held = np.bincount(target.active[index.stateful], minlength=index.client_count) + np.bincount(
        target.standby[target.standby >= 0], minlength=index.client_count
    )
    excess = int(np.maximum(np.maximum(lo - held, held - hi), 0).sum())
    active = {index.task_name(t): int(j) for t, j in enumerate(target.active.tolist())}
    assert (excess, standby_move_cost(index, target)) == best_standbys(problem, active)
