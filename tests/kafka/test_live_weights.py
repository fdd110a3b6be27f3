"""`partition_weights: "live"` end to end: a real broker whose `stickyd-load` assignor asks for live
weights (`stickyd.load.weights=live`), a real `stickyd serve` watching that broker, a producer
writing to two hot partitions, and a KIP-848 group whose members change nothing but the assignor's
name: the group coordinator's assignment puts the two hot partitions on different consumers, asked
of stickyd, with no fallback anywhere."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from stickyd.cli.child_service import ServiceProcess, running_service
from tests.kafka.apache_kafka import ApacheKafka, apache_kafka_broker, stickyd_broker_properties
from tests.kafka.consumer_protocol import TP, Feeder, Member, settle
from tests.kafka.jvm import kafka_jars_built
from tests.kafka.switchboard import Switchboard
from tests.processes import MARK, new_mark, wait_until_none_marked
from tests.service_metrics import metric, requests_to

TOPIC, GROUP = "live-hot", "live-group"
HOT = [(TOPIC, 0), (TOPIC, 1)]
PARTITIONS = {(TOPIC, p) for p in range(6)}


@pytest.fixture(scope="module")
def watched() -> Iterator[tuple[ApacheKafka, ServiceProcess]]:
    """A broker whose stickyd-load asks for live weights through a switchboard, and a service
    watching that broker every 0.5 s over a 4 s window, the switchboard forwarding to it."""
    if not kafka_jars_built():
        pytest.skip("Kafka jars not built: run `mvn -q -B -f plugins/kafka/pom.xml package`")
    board = Switchboard()
    properties = {**stickyd_broker_properties(board.url), "stickyd.load.weights": "live", "stickyd.load.tolerance": "0"}
    mark = new_mark()
    try:
        with apache_kafka_broker(properties) as broker:
            env = {
                MARK: mark,
                "STICKYD_WORKERS": "1",
                "STICKYD_FALLBACK_WORKERS": "1",
                "STICKYD_WATCH_BOOTSTRAP_SERVERS": broker.bootstrap,
                "STICKYD_WATCH_INTERVAL_S": "0.5",
                "STICKYD_WATCH_WINDOW_S": "4",
            }
            with running_service(env) as service:
                board.forward(service.url)
                yield broker, service
    finally:
        board.close()
    assert wait_until_none_marked(mark, 10.0) == {}


def _wait_for_rates(service: ServiceProcess, timeout_s: float = 20.0) -> list[int | None]:
    """The watcher's rates of TOPIC once both hot partitions show traffic."""
    deadline = time.monotonic() + timeout_s
    rates: list[int | None] = []
    while time.monotonic() < deadline:
        rates = httpx.get(f"{service.url}/v1/cluster/rates", timeout=5).json()["topics"].get(TOPIC, [])
        if len(rates) == 6 and all(r is not None for r in rates) and min(rates[0], rates[1]) >= 20:  # type: ignore[type-var]
            return rates
        time.sleep(0.25)
    raise AssertionError(f"no rates for {TOPIC} within {timeout_s} s: {rates}")


def _remembered_group_answer(service: ServiceProcess) -> dict[str, list[int]]:
    """The group resource's door: a remembered group asking for live weights, by topic name."""
    problem = {
        "topics": {TOPIC: 6},
        "partition_weights": "live",
        "members": [{"id": "x", "topics": [TOPIC]}, {"id": "y", "topics": [TOPIC]}],
        "options": {"balance": "load", "load_tolerance": 0},
    }
    body = {"kind": "consumer", "generation": -1, "problem": problem}
    answer = httpx.post(f"{service.url}/v1/groups/live-remembered/rebalance", json=body, timeout=30)
    assert answer.status_code == 200, answer.text
    assignment: dict[str, dict[str, list[int]]] = answer.json()["solution"]["assignment"]
    return {member: parts.get(TOPIC, []) for member, parts in assignment.items()}


def _hot_apart(now: dict[str, frozenset[TP]]) -> bool:
    return len(now) == 2 and all(sum(tp in owned for tp in HOT) == 1 for owned in now.values())


def test_a_stickyd_load_group_with_live_weights_gets_the_hot_partitions_on_different_consumers(
    watched: tuple[ApacheKafka, ServiceProcess],
) -> None:
    broker, service = watched
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, num_partitions=6, replication_factor=1)]).values():
        future.result(timeout=30)
    feeder = Feeder(broker.bootstrap, HOT, every_s=0.002)
    members: list[Member] = []
    try:
        rates = _wait_for_rates(service)
        assert rates[2:] == [0, 0, 0, 0], rates
        remembered = _remembered_group_answer(service)
        asked_before = requests_to(service, "/v1/assign/consumer")
        members = [Member(broker.bootstrap, GROUP, f"c{i}", [TOPIC], assignor="stickyd-load") for i in range(2)]
        _, overlaps = settle(members, PARTITIONS, admin, GROUP, _hot_apart, timeout_s=30)
        described = admin.describe_consumer_groups([GROUP])[GROUP].result(timeout=10)
        groups = httpx.get(f"{service.url}/v1/cluster/groups", timeout=30).json()["groups"]
    finally:
        for member in members:
            member.leave()
        feeder.stop()
    assert sorted(sum(p in (0, 1) for p in parts) for parts in remembered.values()) == [1, 1], remembered
    assert overlaps == []
    assert described.partition_assignor == "stickyd-load"
    owned = [{(tp.topic, tp.partition) for tp in m.assignment.topic_partitions} for m in described.members]
    assert sorted(len(set(HOT) & o) for o in owned) == [1, 1], owned
    assert requests_to(service, "/v1/assign/consumer") > asked_before
    assert metric(service, 'stickyd_requests_total{endpoint="/v1/assign/consumer",strategy="-",status="422"') == 0
    assert metric(service, "stickyd_fallbacks_total") == 0
    assert "uniform assignor until" not in broker.log_text(), "the plug-in fell back"
    group = next(g for g in groups if g["group_id"] == GROUP)
    assert group["protocol"] == "consumer" and len(group["members"]) == 2
    assert group["rates"][TOPIC][0] > 0 and group["total_rate"] >= sum(group["rates"][TOPIC][:2])
