"""Balance `per_topic` and `load` through the service's solve job: answers, and 422s naming the field
for every input section "What balanced means" of docs/wire-format.md rejects."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from stickyd.models.consumer.wire import decode_consumer
from stickyd.service.processes.solve_job import COLUMN_DECODE_MIN_BYTES, Limits, run_job
from tests.conftest import load_example

TIME_MS = re.compile(rb'"time_ms":[-0-9.e+]+')
LIMITS = Limits(max_partitions=1_000_000, max_members=10_000, default_time_limit_ms=2_000, max_time_limit_ms=30_000)


def _run(problem: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    result = run_job("consumer", json.dumps(problem).encode(), LIMITS)
    return result.status, json.loads(result.body)


def test_the_service_answers_balance_load_with_stats_load() -> None:
    status, body = _run(load_example("consumer-load-strict.json"))
    assert status == 200
    assert body["stats"]["load"] == {"max": 450.0, "min": 400.0, "lower_bound": 450.0, "moves_lower_bound": 1}
    assert body["stats"]["optimal"] is True and body["stats"]["moves"] == 1


def test_the_service_answers_balance_per_topic_without_stats_load() -> None:
    status, body = _run(load_example("consumer-per-topic-join.json"))
    assert status == 200
    assert "load" not in body["stats"]
    assert all(len(parts["hot"]) == 1 and len(parts["cold"]) == 1 for parts in body["assignment"].values())


def _load_problem() -> dict[str, Any]:
    return copy.deepcopy(load_example("consumer-load-hot-partition.json"))


def _set(problem: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    *parents, last = path.split(".")
    node: Any = problem
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[int(last) if isinstance(node, list) else last] = value
    return problem


@pytest.mark.parametrize(
    ("path", "value", "field", "reason"),
    [
        ("partition_weights.orders", [900, -1, 40, 20], "partition_weights.orders[1]", "negative"),
        ("partition_weights.orders", [900, 10**12 + 1, 40, 20], "partition_weights.orders[1]", "over 10^12"),
        ("partition_weights.clicks", 2.5, "partition_weights.clicks", "not an integer"),
        ("partition_weights.orders", [900, 40, 40], "partition_weights.orders", "3 weights, but orders has 4"),
        ("partition_weights.payments", 5, "partition_weights.payments", "unknown topic"),
        ("partition_weights", "live", "partition_weights", "watches no Kafka cluster"),
        ("members.0.capacity", 0, "members[0].capacity", "greater than or equal to 1"),
        ("members.0.capacity", 10**6 + 1, "members[0].capacity", "less than or equal to 1000000"),
        ("members.0.capacity", 1.5, "members[0].capacity", "integer"),
        ("options.load_tolerance", 1.5, "options.load_tolerance", "less than or equal to 1"),
        ("options.balance", "weight", "options.balance", "'count', 'per_topic' or 'load'"),
    ],
)
def test_bad_balance_input_is_a_422_naming_the_field(path: str, value: Any, field: str, reason: str) -> None:
    status, body = _run(_set(_load_problem(), path, value))
    assert status == 422
    assert body["field"] == field
    assert reason in body["reason"]


def test_a_large_load_request_decoded_as_columns_answers_as_the_plain_path() -> None:
    """Bodies over the column-decoding size carry partition_weights and capacity through the
    fast decoder; the answer is the one the plain dict path gives, byte for byte (time aside)."""
    partitions = 20_000
    problem = {
        "topics": {"t": partitions},
        "partition_weights": {"t": [(p * 7919) % 100_000 for p in range(partitions)]},
        "members": [
            {
                "id": f"c{i}",
                "topics": ["t"],
                "capacity": 1 + i % 3,
                "generation": 2,
                "owned": {"t": list(range(i, partitions, 9))} if i < 9 else {},
            }
            for i in range(10)
        ],
        "options": {"balance": "load", "time_limit_ms": 5_000},
    }
    body = json.dumps(problem).encode()
    assert len(body) >= COLUMN_DECODE_MIN_BYTES
    assert decode_consumer(body) is not None
    fast, plain = run_job("consumer", body, LIMITS), run_job("consumer", problem, LIMITS)
    assert fast.status == plain.status == 200
    assert TIME_MS.sub(b"", fast.body) == TIME_MS.sub(b"", plain.body)
