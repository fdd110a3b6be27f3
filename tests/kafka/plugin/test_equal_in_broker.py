"""The KIP-848 plug-in with `stickyd.equal.subscriptions=broker`: a group of equal subscriptions is
solved in the broker with the very answer the service gives it (both run in one JVM, on the same
group as the coordinator holds it; and on random groups, the broker's closed form beside the
service's solver), and the service is not asked."""

from __future__ import annotations

import base64
import json
import random
import string
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.incremental.events import after_optimum
from bench.kafka_assignors import run_kafka
from bench.layouts import kafka_like_problem, write_problem_json
from stickyd.cli.child_service import ServiceProcess
from stickyd.solvers import solve_consumer
from tests.kafka.jvm import APP_CLASSPATH, kafka_jars_built

ASSIGNORS = ["stickyd-plugin", "stickyd-plugin-broker-equal"]


def _scattered(seed: int) -> dict[str, Any]:
    """12 topics of 1-40 partitions, 9 members: each partition held by a random member or by nobody
    (new, or its member gone), so that some members hold far more than their share."""
    rng = random.Random(seed)
    topics = {f"topic-{t:02d}": rng.randint(1, 40) for t in range(12)}
    members: list[dict[str, Any]] = [{"id": f"member-{m}", "topics": sorted(topics), "owned": {}} for m in range(9)]
    for topic, count in topics.items():
        for p in range(count):
            holder = rng.choice([0, 0, 1, 2, 3, 4, 5, 6, 7, 8, None, None])
            if holder is not None:
                members[holder]["owned"].setdefault(topic, []).append(p)
    return {"topics": topics, "members": members}


CASES = {
    # the smallest group: the service answers it with its plain-list solver for tiny groups
    "floor-leave": lambda: kafka_like_problem(20, 4, layout="sticky", shape="equal", event="leave"),
    "range-join": lambda: kafka_like_problem(2_000, 50, layout="range", shape="equal", event="join"),
    "roundrobin-leave": lambda: kafka_like_problem(2_000, 50, layout="roundrobin", shape="equal", event="leave"),
    "sticky-partitions-added": lambda: kafka_like_problem(
        2_000, 50, layout="sticky", shape="equal", event="partitions-added"
    ),
    "stickyd-leave": lambda: after_optimum(2_000, 50, "equal", "leave"),
    "scattered": lambda: _scattered(11),
}


@pytest.mark.skipif(not kafka_jars_built(), reason="Kafka jars not built (mvn package)")
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_broker_gives_a_group_of_equal_subscriptions_the_services_answer(
    case: str, service: ServiceProcess, tmp_path: Path
) -> None:
    problem = CASES[case]()
    problem["options"] = {"time_limit_ms": 2_000}
    problem_file = write_problem_json(problem, tmp_path / "problem.json")
    env = {"STICKYD_URL": service.url, "STICKYD_TIMEOUT_MS": "4000"}
    out = run_kafka(problem_file, ASSIGNORS, large=False, cap_s=120, env=env, owners_dir=tmp_path)
    asked, in_broker = (out[a] for a in ASSIGNORS)
    assert asked.figures is not None and in_broker.figures is not None, (asked.note, in_broker.note)
    # the service answered every call of the first; none of the second asked it
    assert asked.figures["fallbacks"] == 0 and asked.figures["broker_solves"] == 0
    assert in_broker.figures["fallbacks"] == 0 and in_broker.figures["broker_solves"] > 0
    by_service, by_broker = (np.fromfile(tmp_path / f"{a}.owners", dtype=">i4") for a in ASSIGNORS)
    assert len(by_service) == sum(problem["topics"].values())
    assert (by_service >= 0).all()
    assert np.array_equal(by_service, by_broker)


@pytest.mark.skipif(not kafka_jars_built(), reason="Kafka jars not built (mvn package)")
def test_a_group_of_unequal_subscriptions_is_still_asked_of_the_service(
    service: ServiceProcess, tmp_path: Path
) -> None:
    problem = kafka_like_problem(2_000, 50, layout="sticky", shape="unequal", event="leave")
    problem["options"] = {"time_limit_ms": 2_000}
    problem_file = write_problem_json(problem, tmp_path / "problem.json")
    env = {"STICKYD_URL": service.url, "STICKYD_TIMEOUT_MS": "4000"}
    out = run_kafka(problem_file, ASSIGNORS, large=False, cap_s=120, env=env, owners_dir=tmp_path)
    in_broker = out["stickyd-plugin-broker-equal"]
    assert in_broker.figures is not None, in_broker.note
    assert in_broker.figures["broker_solves"] == 0 and in_broker.figures["fallbacks"] == 0
    by_service, by_broker = (np.fromfile(tmp_path / f"{a}.owners", dtype=">i4") for a in ASSIGNORS)
    assert np.array_equal(by_service, by_broker)


def _topic_id(k: int) -> str:
    """A topic id as Kafka's `Uuid.toString` writes it: its 16 bytes in URL-safe base64, unpadded."""
    return base64.urlsafe_b64encode((0x5717CD).to_bytes(8, "big") + k.to_bytes(8, "big")).decode().rstrip("=")


@st.composite
def _equal_groups(draw: st.DrawFn) -> dict[str, Any]:
    """1-5 topics (named by their ids) of 0-12 partitions, 1-6 members all subscribed to every topic,
    each partition held by one of them or by nobody."""
    numbers = draw(st.lists(st.integers(1, 2**62), min_size=1, max_size=5, unique=True))
    topics = {_topic_id(k): draw(st.integers(0, 12)) for k in numbers}
    id_text = st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=1, max_size=8)
    ids = draw(st.lists(id_text, min_size=1, max_size=6, unique=True))
    members: list[dict[str, Any]] = [{"id": i, "topics": sorted(topics), "owned": {}} for i in ids]
    for topic, count in topics.items():
        for p in range(count):
            holder = draw(st.integers(-1, len(ids) - 1))
            if holder >= 0:
                members[holder]["owned"].setdefault(topic, []).append(p)
    return {"topics": topics, "members": members}


def _given(assignment: dict[str, dict[str, list[int]]]) -> dict[str, dict[str, list[int]]]:
    return {m: {t: sorted(ps) for t, ps in given.items() if ps} for m, given in assignment.items()}


@pytest.mark.skipif(not kafka_jars_built(), reason="Kafka jars not built (mvn package)")
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(groups=st.lists(_equal_groups(), min_size=30, max_size=30))
def test_on_random_groups_the_broker_answers_as_the_service_solves(groups: list[dict[str, Any]]) -> None:
    """The broker's closed form (`EqualSubscriptions`, through the plug-in's read and answer) on 30
    random groups per JVM, each beside stickyd's own solver on the same request."""
    with tempfile.TemporaryDirectory(prefix="stickyd-equal-") as folder:
        file = Path(folder) / "groups.json"
        file.write_text(json.dumps(groups))
        done = subprocess.run(
            ["java", "-Xmx256m", "-cp", APP_CLASSPATH, "io.stickyd.kafka.EqualSubscriptionsDump", str(file)],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
    in_broker = json.loads(done.stdout)
    for group, answer in zip(groups, in_broker, strict=True):
        service = solve_consumer({**group, "options": {"time_limit_ms": 10_000}})
        assert answer is not None
        assert service.stats.optimal
        assert _given(answer) == _given({m: dict(given) for m, given in service.assignment.items()}), group
