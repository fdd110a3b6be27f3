"""The floor widens the promise, not the solvers' time (README 'Floor per size'): a request whose
time limit is below its floor is promised max(limit, floor) + the margin (the deadline the solver
process reports to the pool is the floor's), but the dispatcher's budget is the client's own limit,
so a client asking 1 ms gets the best answer that fits 1 ms (here the fallback), not a flow
started because the floor left time for one."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

from stickyd.service.admission.promise_floor import floor_ms
from stickyd.service.processes.solve_job import Limits, run_job

LIMITS = Limits(max_partitions=2_000_000, max_members=20_000, default_time_limit_ms=2000, max_time_limit_ms=30_000)
SCALE = 100.0
"""a floor of seconds for 20,000 partitions: far more than the optimal solver needs."""


def _unequal_consumer(limit_ms: int) -> bytes:
    """20,000 partitions, members subscribed to overlapping halves of the topics: the optimal
    solver needs the min-cost flow (not the direct construction for equal subscriptions)."""
    topics = {f"t{i}": 2_000 for i in range(10)}
    members = [{"id": f"m{i}", "topics": [f"t{(i + j) % 10}" for j in range(5)]} for i in range(40)]
    problem: dict[str, Any] = {"topics": topics, "members": members, "options": {"time_limit_ms": limit_ms}}
    return json.dumps(problem).encode()


def _run(limit_ms: int) -> tuple[dict[str, Any], float, float, int]:
    body = _unequal_consumer(limit_ms)
    told: list[float] = []
    arrived = time.monotonic()
    result = run_job("consumer", body, replace(LIMITS, floor_scale=SCALE), arrived=arrived, on_deadline=told.append)
    assert result.status == 200
    assert len(told) == 1
    return json.loads(result.body)["stats"], told[0], arrived, floor_ms("consumer", 20_000, len(body), SCALE)


def test_below_the_floor_the_pool_is_told_the_floor_and_the_solvers_aim_at_the_clients_limit() -> None:
    stats, deadline, arrived, floor = _run(1)
    assert floor > 2_000
    assert abs(deadline - (arrived + floor / 1000)) < 1e-6  # the promise: the floor's deadline
    said = " ".join(stats["warnings"])
    assert f"time_limit_ms raised from 1 to {floor}" in said
    # the dispatcher had 1 ms, not the floor's seconds: no optimal solver, the fallback answered
    assert stats["fallback"] and not stats["optimal"]
    assert "time limit" in said


def test_above_the_floor_the_same_request_is_solved_to_optimality() -> None:
    """The control: the same network with a limit above its floor is proven optimal, so the
    fallback above came from the budget and not from the problem."""
    stats, deadline, arrived, floor = _run(20_000)
    assert floor < 20_000
    assert abs(deadline - (arrived + 20.0)) < 1e-6
    assert stats["optimal"] and not stats["fallback"] and stats["solver"] == "min-cost-flow"
