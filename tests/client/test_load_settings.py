"""Balance by load in the assignors: settings refused when built, weights made to fit each round,
capacity carried in the user data, and the leader's in-process fallback solving the same request."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

from stickyd.cli.child_service import free_port
from stickyd.client import fallback
from stickyd.client.aiokafka_assignor import StickydAssignor as AioAssignor
from stickyd.client.assignor import StickydAssignor
from stickyd.client.consumer_mapping import consumer_problem, encode_user_data, member_entry
from stickyd.client.load_settings import LoadSettings, fit_weights
from stickyd.models import ConsumerProblem


def test_capacity_travels_in_the_user_data_and_a_bad_one_is_ignored() -> None:
    assert member_entry("a", ["t"], encode_user_data({}, 3, None, 4))["capacity"] == 4
    assert "capacity" not in member_entry("a", ["t"], encode_user_data({}, 3, None))
    for bad in (0, True, "2", 10**7):
        raw = json.dumps({"v": 1, "owned": {}, "generation": 1, "capacity": bad}).encode()
        assert "capacity" not in member_entry("a", ["t"], raw)


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"balance": "weight"}, "balance"),
        ({"load_tolerance": 1.5}, "load_tolerance"),
        ({"load_tolerance": -0.1}, "load_tolerance"),
        ({"capacity": 0}, "capacity"),
        ({"capacity": 2.0}, "capacity"),
        ({"partition_weights": "rates"}, "partition_weights"),
    ],
)
def test_a_bad_setting_is_refused_when_the_assignor_is_built(settings: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field}:"):
        StickydAssignor(**settings)
    with pytest.raises(ValueError, match=f"^{field}:"):
        AioAssignor(**settings)


def test_weights_are_fitted_to_the_round() -> None:
    """Unknown topics left out, rates rounded, a list of the wrong length or a negative weight
    left out (that topic then weighs the mean)."""
    given = {"t": [1.4, 2.6, 0], "gone": 5, "short": [1, 2], "neg": -3, "one": 7.0}
    topics = {"t": 3, "short": 3, "neg": 1, "one": 2}
    assert fit_weights(given, topics) == {"t": [1, 3, 0], "one": 7}
    assert fit_weights({"gone": 1}, topics) is None


def test_a_weights_callable_is_asked_every_rebalance_and_its_failure_sends_no_weights() -> None:
    rounds = iter([{"t": [5, 1, 1]}, {"t": [1, 1, 5]}])
    settings = LoadSettings(balance="load", partition_weights=lambda: next(rounds))
    members = [member_entry("a", ["t"], None)]
    first = consumer_problem(members, {"t": 3}.get, {"strategy": "optimal"}, settings)
    second = consumer_problem(members, {"t": 3}.get, {"strategy": "optimal"}, settings)
    assert first["partition_weights"] == {"t": [5, 1, 1]} and second["partition_weights"] == {"t": [1, 1, 5]}
    assert first["options"] == {"strategy": "optimal", "balance": "load"}
    failing = consumer_problem(members, {"t": 3}.get, {}, settings)  # the iterator is spent: StopIteration
    assert "partition_weights" not in failing
    not_a_dict = LoadSettings(balance="load", partition_weights=lambda: [1, 2, 3])  # type: ignore[arg-type,return-value]
    assert "partition_weights" not in consumer_problem(members, {"t": 3}.get, {}, not_a_dict)


class Cluster:
    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return {0, 1, 2, 3} if topic == "t" else None


def load_assignors(**settings: Any) -> tuple[AioAssignor, dict[str, ConsumerProtocolMemberMetadata]]:
    """A leader (capacity 3) and a member (capacity 1) reading `t` of 4 partitions, stickyd down."""
    down = f"http://127.0.0.1:{free_port()}"
    leader = AioAssignor(url=down, timeout_ms=300, balance="load", capacity=3, **settings)
    other = AioAssignor(url=down, balance="load", capacity=1)
    return leader, {"big": leader.metadata({"t"}), "small": other.metadata({"t"})}


def test_the_leader_falls_back_to_the_same_load_request_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Equal weights, capacities 3 and 1: the big member takes 3 of the 4 partitions; the
    request the fallback solved carries the weights, both capacities and the options."""
    asked: list[dict[str, Any]] = []
    real = fallback.solve_consumer

    def recording(problem: dict[str, Any]) -> Any:
        asked.append(problem)
        return real(problem)

    monkeypatch.setattr(fallback, "solve_consumer", recording)
    leader, members = load_assignors(partition_weights={"t": 10}, load_tolerance=0)
    assignments = leader.assign(Cluster(), members)  # type: ignore[arg-type]
    assert len(assignments["big"].assignment[0][1]) == 3 and len(assignments["small"].assignment[0][1]) == 1
    problem = ConsumerProblem.model_validate(asked[0])
    assert problem.partition_weights == {"t": 10}
    assert [m.capacity for m in problem.members] == [3, 1]
    assert problem.options.balance == "load" and problem.options.load_tolerance == 0
    assert leader.last_solution is not None and leader.last_solution.stats.load is not None
    assert leader.fallbacks == 1


def test_live_weights_fall_back_to_no_weights_in_process() -> None:
    leader, members = load_assignors(partition_weights="live")
    assignments = leader.assign(Cluster(), members)  # type: ignore[arg-type]
    assert sorted(p for a in assignments.values() for _, parts in a.assignment for p in parts) == [0, 1, 2, 3]
    assert len(assignments["big"].assignment[0][1]) == 3


def test_the_kafka_python_assignor_sends_capacity_and_weights() -> None:
    assignor = StickydAssignor(balance="per_topic", capacity=2, partition_weights={"t": [1, 2, 3, 4]})
    entry = member_entry("m", ["t"], assignor.metadata({"t"}).user_data)
    assert entry["capacity"] == 2

    class Member:
        member_id = "m"
        metadata = assignor.metadata({"t"})

    problem = assignor.problem(Cluster(), [Member()])
    assert problem["options"]["balance"] == "per_topic" and problem["partition_weights"] == {"t": [1, 2, 3, 4]}
    assert problem["members"][0]["capacity"] == 2
