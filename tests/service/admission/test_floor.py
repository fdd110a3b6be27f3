"""The per-size floor (service/admission/promise_floor.py): 0 up to 10,000 partitions or tasks, growing with the
size beyond; a request whose time limit is below its floor has the limit raised to it and says so
in `warnings` (the promise is max(limit, floor) + the margin); STICKYD_FLOOR_SCALE scales it."""

from __future__ import annotations

import json
from typing import Any

from stickyd.service.admission.promise_floor import FREE_BYTES, FREE_UNITS, answer_cost_ms, floor_estimate_ms, floor_ms
from stickyd.service.processes.solve_job import Limits, run_job

LIMITS = Limits(max_partitions=2_000_000, max_members=20_000, default_time_limit_ms=2000, max_time_limit_ms=30_000)


def _consumer(partitions: int, limit_ms: int) -> bytes:
    problem: dict[str, Any] = {
        "topics": {f"t{i}": partitions // 10 for i in range(10)},
        "members": [{"id": f"m{i}", "topics": [f"t{j}" for j in range(10)]} for i in range(20)],
        "options": {"time_limit_ms": limit_ms},
    }
    return json.dumps(problem).encode()


def test_the_floor_is_zero_up_to_ten_thousand_units_and_grows_beyond() -> None:
    for kind in ("consumer", "streams"):
        assert floor_ms(kind, FREE_UNITS, FREE_BYTES) == 0
        small, large = floor_ms(kind, 100_000, 1_000_000), floor_ms(kind, 1_000_000, 10_000_000)
        assert 0 < small < large
        assert floor_ms(kind, 1_000_000, 10_000_000, scale=0) == 0
        assert floor_ms(kind, 1_000_000, 10_000_000, scale=2) >= 2 * large - 1
    # the web process's estimate from the body's size alone: grows with it, off with the floor
    assert 0 < answer_cost_ms("consumer", 1_000_000) < answer_cost_ms("consumer", 16_000_000)
    assert answer_cost_ms("consumer", 16_000_000, scale=0) == 0
    assert floor_estimate_ms("streams", 16_000_000, scale=0) == 0


def test_a_streams_bodys_cheapest_answer_costs_less_than_its_floor() -> None:
    """Streams (measured: 390 ms of CPU for a 5.09 MB 200k-task body, floor 1,241 ms kept for 8 at
    once): the web process counts with the floor as the deadline and with about 1.7 times the CPU
    as the cheapest answer's cost, so a queued request waits for a solver process until the
    difference; consumer groups count with one figure for both."""
    body = 5_087_314
    assert 1.5 * 390 < answer_cost_ms("streams", body) < 0.6 * floor_estimate_ms("streams", body)
    assert abs(floor_estimate_ms("streams", body) - floor_ms("streams", 200_000, body)) < 0.01 * 1241
    assert answer_cost_ms("consumer", 11_743_836) == floor_estimate_ms("consumer", 11_743_836)


def test_a_limit_below_the_floor_is_raised_and_said_in_warnings() -> None:
    body = _consumer(100_000, 1)
    floor = floor_ms("consumer", 100_000, len(body))
    result = run_job("consumer", body, LIMITS)
    assert result.status == 200
    warnings = json.loads(result.body)["stats"]["warnings"]
    assert f"time_limit_ms raised from 1 to {floor}: the floor for a request of 100000 partitions" in " ".join(warnings)


def test_no_warning_at_or_above_the_floor_nor_below_ten_thousand_partitions() -> None:
    for body in (_consumer(10_000, 1), _consumer(100_000, 20_000)):
        result = run_job("consumer", body, LIMITS)
        assert result.status == 200
        assert "raised from" not in " ".join(json.loads(result.body)["stats"]["warnings"])


def test_a_consumer_floor_follows_the_partitions_more_than_the_bytes() -> None:
    """Measured: a 32 MB equal-subscription body of 1M partitions costs no more to answer than the
    12 MB Kafka-like one, so its floor is not near three times as high; the web process's estimate
    from the body's size alone is the Kafka-like class's floor."""
    kafka_like, equal = floor_ms("consumer", 1_000_000, 11_743_836), floor_ms("consumer", 1_000_000, 31_853_319)
    assert kafka_like < equal < 1.25 * kafka_like
    assert abs(answer_cost_ms("consumer", 11_743_836) - kafka_like) < 0.01 * kafka_like
