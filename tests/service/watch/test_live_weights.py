"""`partition_weights: "live"` through the service's solve job: measured rates become the weights
(by topic name or topic id), unmeasured partitions weigh their topic's mean, and a service without
a watched cluster or without a measurement for a subscribed topic answers 422 naming the field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stickyd.service.processes.solve_job import Limits, run_job
from stickyd.service.watch.rates import UNMEASURED, LiveRates
from tests.conftest import assert_valid

LIMITS = Limits(max_partitions=1_000_000, max_members=10_000, default_time_limit_ms=2_000, max_time_limit_ms=30_000)


def _problem(topic: str = "orders", partitions: int = 4) -> dict[str, Any]:
    return {
        "topics": {topic: partitions},
        "partition_weights": "live",
        "members": [{"id": "a", "topics": [topic]}, {"id": "b", "topics": [topic]}],
        "options": {"balance": "load", "load_tolerance": 0},
    }


def _run(problem: dict[str, Any], live: LiveRates | None) -> tuple[int, dict[str, Any]]:
    result = run_job("consumer", json.dumps(problem).encode(), LIMITS, live=live)
    return result.status, json.loads(result.body)


def _loads(problem: dict[str, Any], body: dict[str, Any], weights: list[int]) -> list[int]:
    topic = next(iter(problem["topics"]))
    # the validator checks stats.load against the weights the watcher's rates became
    assert_valid({**problem, "partition_weights": {topic: weights}}, _solution(body))
    return sorted(sum(weights[p] for p in parts.get(topic, [])) for parts in body["assignment"].values())


def _solution(body: dict[str, Any]) -> Any:
    from stickyd.models import ConsumerSolution

    return ConsumerSolution.model_validate(body)


def test_live_weights_put_the_two_hot_partitions_on_different_members() -> None:
    rates = LiveRates({"orders": (900, 1, 850, 2)}, {"T0pIcId": "orders"}, 60.0, 1.0)
    problem = _problem()
    status, body = _run(problem, rates)
    assert status == 200, body
    assert _loads(problem, body, [900, 1, 850, 2]) == [853, 900]
    assert any("records/s measured over the last 60 s" in w for w in body["stats"]["warnings"])


def test_a_topic_id_finds_its_rates_as_the_kip848_plugin_sends_it() -> None:
    rates = LiveRates({"orders": (900, 1, 850, 2)}, {"T0pIcId": "orders"}, 60.0, 1.0)
    problem = _problem("T0pIcId")
    status, body = _run(problem, rates)
    assert status == 200, body
    assert _loads(problem, body, [900, 1, 850, 2]) == [853, 900]


def test_unmeasured_partitions_weigh_their_topics_mean_and_a_warning_names_them() -> None:
    """Partition 2 (not measured yet) and 4-5 (added since the last sample) weigh the mean of the
    measured ones, (600 + 0 + 0) // 3 = 200."""
    rates = LiveRates({"orders": (600, 0, UNMEASURED, 0)}, {}, 30.0, 1.0)
    problem = _problem(partitions=6)
    status, body = _run(problem, rates)
    assert status == 200, body
    warning = next(w for w in body["stats"]["warnings"] if "mean rate" in w)
    assert "orders 2, 4-5" in warning
    assert _loads(problem, body, [600, 0, 200, 0, 200, 200]) == [600, 600]


@pytest.mark.parametrize(
    ("rates", "reason"),
    [
        (None, "watches no Kafka cluster (STICKYD_WATCH_BOOTSTRAP_SERVERS is unset)"),
        (LiveRates(), "no measurement yet for topic orders: the watcher has not read the cluster yet"),
        (
            LiveRates({"orders": (UNMEASURED,) * 4}, {}, 0.0, 1.0),
            "no measurement yet for topic orders: the watcher has sampled it once",
        ),
        (
            LiveRates({"clicks": (5,)}, {}, 10.0, 1.0),
            "no measurement for topic orders: the watched cluster has no such topic",
        ),
    ],
)
def test_live_without_a_measurement_is_a_422_naming_partition_weights_and_the_topic(
    rates: LiveRates | None, reason: str
) -> None:
    status, body = _run(_problem(), rates)
    assert status == 422
    assert body["field"] == "partition_weights"
    assert reason in body["reason"]


def test_given_weights_are_untouched_by_the_watcher() -> None:
    problem = {**_problem(), "partition_weights": {"orders": [1, 1, 1, 1]}}
    status, body = _run(problem, LiveRates({"orders": (900, 1, 850, 2)}, {}, 60.0, 1.0))
    assert status == 200
    assert not any("measured" in w for w in body["stats"]["warnings"])
