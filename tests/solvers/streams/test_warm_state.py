"""The tie-break below every Streams level that uses the state clients still hold on disk (a lag
reported on a task they do not run): new standby replicas go where the least state must be
rebuilt (solvers/streams/warm_standbys.py), and it never costs a level above it."""

from __future__ import annotations

import itertools
import random
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stickyd.models.streams.index import StreamsIndex, index_streams_problem
from stickyd.models.streams.problem import StreamsProblem
from stickyd.models.streams.validation import target_violations, validate_streams_solution
from stickyd.solvers import solve_streams
from stickyd.solvers.streams.flow import StreamsTarget, solve_streams_flows
from stickyd.solvers.streams.result import active_move_cost, balance_excess, standby_move_cost
from stickyd.solvers.streams.warm_standbys import place_warm_standbys
from tests.record_answers import streams_request

RAISED: dict[str, Any] = {
    "subtopologies": [{"id": "1", "partitions": 3, "stateful": True}],
    "clients": [
        {"id": "a", "active": ["1_0"]},
        {"id": "c", "active": ["1_1"]},
        # d ran 1_0 once: its state directory is still there, 40 records behind
        {"id": "d", "active": ["1_2"], "lags": {"1_0": 40}},
    ],
    "config": {"num_standby_replicas": 1, "max_warmup_replicas": 0, "acceptable_recovery_lag": 0},
    "task_costs": {"1_0": 1000, "1_1": 10, "1_2": 10},
    "options": {"stickiness": "restore_cost"},
}
"""Standbys turned on: every task gets a new standby replica, one on each client."""


def test_a_new_standby_goes_where_part_of_its_state_already_is() -> None:
    index = _index(RAISED)
    # 1_0's replica on c restores all 1,000 records; on d, 40
    cold = StreamsTarget(active=np.array([0, 1, 2]), standby=np.array([[1], [2], [0]]))
    warm = place_warm_standbys(index, cold)
    assert warm.standby.ravel().tolist() == [2, 0, 1]
    assert solve_streams(RAISED).target["d"].standby == ["1_0"]


def test_without_lags_on_other_clients_the_target_is_returned_as_it_is() -> None:
    problem = {**RAISED, "clients": [{**c, "lags": {}} for c in RAISED["clients"]]}
    index = _index(problem)
    target = StreamsTarget(active=np.array([0, 1, 2]), standby=np.array([[1], [2], [0]]))
    assert place_warm_standbys(index, target) is target


def _index(problem: dict[str, Any]) -> StreamsIndex:
    return index_streams_problem(StreamsProblem.model_validate(problem))


def with_disk_state(rng: random.Random) -> dict[str, Any]:
    """A small random Streams request whose clients also report lags on stateful tasks they do
    not hold (state left on disk), moves weighed by restore cost half the time."""
    problem = streams_request(rng)
    problem["options"] = {}
    stateful = [f"{s['id']}_{p}" for s in problem["subtopologies"] if s["stateful"] for p in range(s["partitions"])]
    for client in problem["clients"]:
        held = set(client["active"]) | set(client["standby"])
        others = [t for t in stateful if t not in held]
        lags = client.setdefault("lags", {})
        lags.update({t: rng.choice([0, 30, 700, 9_000]) for t in rng.sample(others, min(len(others), 3))})
    if rng.random() < 0.5:
        problem["options"]["stickiness"] = "restore_cost"
        problem["task_costs"] = {t: rng.choice([1, 500, 10_000]) for t in stateful}
    return problem


def restore_of(problem: dict[str, Any], task: str, client: int) -> int:
    """What building `task`'s state on the client costs, read from the request alone: its lag;
    else 0 for the task's previous active owner; else the whole state (the task's restore cost,
    or one past its largest reported lag)."""
    clients = problem["clients"]
    lags = clients[client].get("lags", {})
    if task in lags:
        whole = _whole(problem, task)
        return min(lags[task], whole)
    owners = [j for j, c in enumerate(clients) if task in c["active"]]
    if owners == [client]:
        return 0
    return _whole(problem, task)


def _whole(problem: dict[str, Any], task: str) -> int:
    reported = [c["lags"][task] + 1 for c in problem["clients"] if task in c.get("lags", {})]
    cost = problem.get("task_costs", {}).get(task, 1) if problem["options"].get("stickiness") == "restore_cost" else 0
    return max([cost, *reported])


def _new_replicas(index: StreamsIndex, target: StreamsTarget) -> list[tuple[int, int]]:
    """(task, client) of every standby on a client that held no standby of that task before."""
    before = {tuple(pair) for pair in index.standby_pairs.tolist()}
    stateful = np.flatnonzero(index.stateful).tolist()
    return [(t, j) for t in stateful for j in target.standby[t].tolist() if (t, j) not in before]


def _figures(problem: dict[str, Any], index: StreamsIndex, target: StreamsTarget) -> tuple[int, int]:
    """(new standbys on their active's rack, state their clients must build)."""
    racks = [c.get("rack") for c in problem["clients"]]
    new = _new_replicas(index, target)
    on_rack = sum(1 for t, j in new if racks[j] is not None and racks[j] == racks[int(target.active[t])])
    return on_rack, sum(restore_of(problem, index.names[t], j) for t, j in new)


def best_figures(problem: dict[str, Any], index: StreamsIndex, target: StreamsTarget) -> tuple[int, int] | None:
    """By enumeration: the least (on-rack, restore) over every way of giving the target's new
    replicas to clients that neither run the task, hold a standby of it, nor held one before,
    each client taking as many as the target gave it; None when there are too many ways."""
    new = _new_replicas(index, target)
    tasks = sorted({t for t, _ in new})
    taken = sorted(j for _, j in new)
    before = {tuple(pair) for pair in index.standby_pairs.tolist()}
    choices = []
    for t in tasks:
        kept = {j for j in target.standby[t].tolist() if (t, j) in before}
        eligible = [
            j for j in range(index.client_count) if j != target.active[t] and j not in kept and (t, j) not in before
        ]
        count = sum(1 for u, _ in new if u == t)
        choices.append([(t, combo) for combo in itertools.combinations(eligible, count)])
    if np.prod([len(c) for c in choices], dtype=float) > 20_000:
        return None
    racks = [c.get("rack") for c in problem["clients"]]
    best = None
    for pick in itertools.product(*choices):
        if sorted(j for _, combo in pick for j in combo) != taken:
            continue
        on_rack = sum(
            1 for t, combo in pick for j in combo if racks[j] is not None and racks[j] == racks[int(target.active[t])]
        )
        restore = sum(restore_of(problem, index.names[t], j) for t, combo in pick for j in combo)
        best = min(best or (on_rack, restore), (on_rack, restore))
    return best


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_warm_placement_costs_no_level_and_rebuilds_the_least_state(seed: int) -> None:
    problem = with_disk_state(random.Random(seed))
    index = _index(problem)
    target = solve_streams_flows(index)
    warm = place_warm_standbys(index, target)
    assert target_violations(index, warm.active, warm.standby) == []
    assert (warm.active == target.active).all()
    assert balance_excess(index, warm) == balance_excess(index, target)
    assert active_move_cost(index, warm) == active_move_cost(index, target)
    assert standby_move_cost(index, warm) == standby_move_cost(index, target)
    assert _figures(problem, index, warm) <= _figures(problem, index, target)
    best = best_figures(problem, index, target)
    if best is not None:
        assert _figures(problem, index, warm) == best
    solution = solve_streams(problem)
    assert validate_streams_solution(StreamsProblem.model_validate(problem), solution) == []
