"""The KIP-848 plug-in with `stickyd.unequal.subscriptions=broker`: a group of unequal subscriptions
whose even split meets the moves' bound is solved in the broker (one max flow in the JVM) and the
service is not asked; its answer moves exactly as many partitions as the service's proven optimum and
loads every member as evenly, each partition with a member subscribed to its topic. The broker solves
exactly the groups whose even split the service's own max flow finds at the bound; any other (an even
split that needs a chain of give-ups) is still asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.incremental.events import after_optimum
from bench.kafka_assignors import run_kafka
from bench.layouts import kafka_like_problem, write_problem_json
from stickyd.cli.child_service import ServiceProcess
from stickyd.models import ConsumerProblem, index_consumer_problem
from stickyd.solvers.consumer.classes import build_classes
from stickyd.solvers.consumer.flow import solve_even_at_bound
from tests.kafka.jvm import kafka_jars_built
from tests.solvers.consumer.test_flow_estimate import NEEDS_A_CHAIN

ASSIGNORS = ["stickyd-plugin", "stickyd-plugin-broker-unequal"]

CASES = {
    "range-join": lambda: kafka_like_problem(2_000, 50, layout="range", shape="unequal", event="join"),
    "roundrobin-leave": lambda: kafka_like_problem(2_000, 50, layout="roundrobin", shape="unequal", event="leave"),
    "sticky-partitions-added": lambda: kafka_like_problem(
        2_000, 50, layout="sticky", shape="unequal", event="partitions-added"
    ),
    "stickyd-leave": lambda: after_optimum(2_000, 50, "unequal", "leave"),
    "stickyd-join": lambda: after_optimum(2_000, 50, "unequal", "join"),
    "stickyd-partitions-added": lambda: after_optimum(2_000, 50, "unequal", "partitions-added"),
}


def _run(problem: dict[str, Any], service: ServiceProcess, tmp_path: Path) -> tuple[Any, Any, np.ndarray]:
    problem["options"] = {"time_limit_ms": 2_000}
    problem_file = write_problem_json(problem, tmp_path / "problem.json")
    env = {"STICKYD_URL": service.url, "STICKYD_TIMEOUT_MS": "4000"}
    out = run_kafka(problem_file, ASSIGNORS, large=False, cap_s=120, env=env, owners_dir=tmp_path)
    asked, in_broker = (out[a] for a in ASSIGNORS)
    assert asked.figures is not None and in_broker.figures is not None, (asked.note, in_broker.note)
    assert asked.figures["fallbacks"] == 0 and in_broker.figures["fallbacks"] == 0
    return asked, in_broker, np.fromfile(tmp_path / f"{ASSIGNORS[1]}.owners", dtype=">i4")


@pytest.mark.skipif(not kafka_jars_built(), reason="Kafka jars not built (mvn package)")
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_broker_moves_and_loads_a_group_of_unequal_subscriptions_as_the_services_optimum(
    case: str, service: ServiceProcess, tmp_path: Path
) -> None:
    problem = CASES[case]()
    index = index_consumer_problem(ConsumerProblem.model_validate(problem))
    at_bound = solve_even_at_bound(index, build_classes(index)) is not None
    # after Kafka's own assignors (and partitions added to stickyd's answer) these groups are even at the bound
    assert at_bound or case in ("stickyd-leave", "stickyd-join")
    asked, in_broker, owners = _run(problem, service, tmp_path)
    assert asked.figures["broker_solves"] == 0
    assert (in_broker.figures["broker_solves"] > 0) == at_bound
    for figure in ("moves", "min_load", "max_load", "unassigned"):
        assert in_broker.figures[figure] == asked.figures[figure], figure
    # every partition with a member subscribed to its topic (members and topics in the problem's order)
    start = 0
    for topic, count in problem["topics"].items():
        readers = [m for m, member in enumerate(problem["members"]) if topic in member["topics"]]
        assert set(owners[start : start + count].tolist()) <= set(readers), topic
        start += count
    assert start == len(owners)


@pytest.mark.skipif(not kafka_jars_built(), reason="Kafka jars not built (mvn package)")
def test_a_group_whose_even_split_needs_a_chain_is_asked_of_the_service(
    service: ServiceProcess, tmp_path: Path
) -> None:
    asked, in_broker, _ = _run(dict(NEEDS_A_CHAIN), service, tmp_path)
    assert in_broker.figures["broker_solves"] == 0
    assert in_broker.figures["moves"] == asked.figures["moves"] == 2
