"""Balance `per_topic` and `load` through the service's solve job: answers, and 422s naming the field
for every input section "What balanced means" of docs/wire-format.md rejects."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from stickyd.service.processes.solve_job import Limits, run_job
from tests.conftest import load_example

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
