"""The tie-breaks below the Streams levels (solvers/streams/stateless.py): stateless tasks stay
put, then no client is idle where the shares allow it a task; neither ever costs an earlier level."""

from __future__ import annotations

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
from stickyd.solvers.streams.stateless import settle_stateless
from tests.record_answers import streams_request

UNEQUAL: dict[str, Any] = {
    "subtopologies": [{"id": "0", "partitions": 6, "stateful": False}],
    "clients": [
        {"id": "m0", "capacity": 1},
        {"id": "m1", "capacity": 1},
        {"id": "m2", "capacity": 3},
        {"id": "m3", "capacity": 3},
    ],
}
"""Shares of 6 tasks by capacity: m0 and m1 take 0 or 1, m2 and m3 2 or 3."""


def test_no_client_is_idle_where_the_shares_allow_each_a_task() -> None:
    solution = solve_streams(UNEQUAL)
    assert [len(solution.target[c].active) for c in ("m0", "m1", "m2", "m3")] == [1, 1, 2, 2]


def test_stateless_tasks_stay_put_before_an_idle_client_gets_work() -> None:
    """Moving a task to m0 or m1 would cost a stateless move: they stay idle."""
    owned = [{**c, "active": []} for c in UNEQUAL["clients"][:2]] + [
        {**UNEQUAL["clients"][2], "active": ["0_0", "0_1", "0_2"]},
        {**UNEQUAL["clients"][3], "active": ["0_3", "0_4", "0_5"]},
    ]
    solution = solve_streams({**UNEQUAL, "clients": owned})
    assert {c: solution.target[c].active for c in ("m0", "m1")} == {"m0": [], "m1": []}
    assert solution.target["m2"].active == ["0_0", "0_1", "0_2"]


def _index(problem: dict[str, Any]) -> StreamsIndex:
    return index_streams_problem(StreamsProblem.model_validate(problem))


def test_a_needless_stateless_move_is_undone() -> None:
    problem = {**UNEQUAL, "clients": [{**c, "active": [f"0_{j}"]} for j, c in enumerate(UNEQUAL["clients"])]}
    index = _index(problem)
    # 0_0 and 0_1 moved off m0 and m1 for no reason; 0_4 and 0_5 (unowned) shared by m2 and m3
    target = StreamsTarget(active=np.array([2, 3, 2, 3, 2, 3]), standby=np.zeros((6, 0), dtype=np.int64))
    settled = settle_stateless(index, target)
    assert settled.active[:4].tolist() == [0, 1, 2, 3]
    assert sorted(settled.active[4:].tolist()) == [2, 3]


def _stateless_moves(index: StreamsIndex, active: np.ndarray) -> int:
    owned = ~index.stateful & (index.prev_active >= 0)
    return int((owned & (active != index.prev_active)).sum())


def _idle(index: StreamsIndex, active: np.ndarray) -> int:
    return int((np.bincount(active, minlength=index.client_count) == 0).sum())


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_settling_never_costs_an_earlier_level(seed: int) -> None:
    problem = streams_request(random.Random(seed))
    problem["options"] = {}
    index = _index(problem)
    target = solve_streams_flows(index)
    settled = settle_stateless(index, target)
    assert target_violations(index, settled.active, settled.standby) == []
    assert (settled.standby == target.standby).all()
    assert (settled.active[index.stateful] == target.active[index.stateful]).all()
    assert balance_excess(index, settled) == balance_excess(index, target)
    assert active_move_cost(index, settled) == active_move_cost(index, target)
    assert standby_move_cost(index, settled) == standby_move_cost(index, target)
    before = (_stateless_moves(index, target.active), _idle(index, target.active))
    after = (_stateless_moves(index, settled.active), _idle(index, settled.active))
    assert after <= before
    assert settled is target or after < before
    solution = solve_streams(problem)
    assert validate_streams_solution(StreamsProblem.model_validate(problem), solution) == []
