"""StickydStreamsGroupAssignor inside a real Apache Kafka 4.4 broker (KIP-1071 streams groups,
selected through KIP-1357's `group.streams.assignors` and the group config `streams.assignor.name`):
the test Kafka Streams application (`CountApp`, a repartition and a RocksDB count) runs with
`group.protocol=streams`, so the broker's group coordinator assigns its tasks. With a real
`stickyd serve` behind the broker the group is assigned by stickyd (its request counter rises, the
broker logs no fallback, the plug-in's request counter read over JMX rises and its outage gauge is
0); with the service stopped Kafka's built-in `sticky` takes over, the application keeps
processing, and over JMX the outage gauge is 1 and the fallbacks have risen."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from stickyd.cli.child_service import ServiceProcess, free_port, running_service
from tests.kafka.apache_kafka import ApacheKafka, apache_kafka_broker
from tests.kafka.jvm import kafka_jars_built
from tests.kafka.plugin.jmx import read_mbeans, streams_bean
from tests.kafka.streams.streams_app import PARTITIONS, StreamsApp, streams_app
from tests.service_metrics import requests_to

ASSIGNOR_CLASS = "io.stickyd.kafka.streams.StickydStreamsGroupAssignor"
TASKS = {f"{s}_{p}" for s in ("0", "1") for p in range(PARTITIONS)}
FALLBACK_LINE = "did not answer"  # the Outage WARN that starts an outage (io.stickyd logs at INFO)

# Kafka Streams on the streams protocol: the group's assignment is the broker's, the rest of the
# test application's settings stay (the client-side assignment ones are ignored with a warning).
STREAMS_PROTOCOL = {"group.protocol": "streams"}
STREAMS_BEAN = streams_bean()


@pytest.fixture
def stickyd(tmp_path: Path) -> Iterator[tuple[ServiceProcess, ExitStack]]:
    """A `stickyd serve` of this test's own, so that the test can stop it (close the stack)."""
    with ExitStack() as stack:
        service = stack.enter_context(running_service({"STICKYD_WORKERS": "1"}))
        warm = {"subtopologies": [{"id": "0", "partitions": 2, "stateful": True}], "clients": [{"id": "a"}]}
        httpx.post(f"{service.url}/v1/assign/streams", json=warm, timeout=30).raise_for_status()
        yield service, stack


@pytest.fixture
def broker(stickyd: tuple[ServiceProcess, ExitStack]) -> Iterator[ApacheKafka]:
    """A broker whose streams groups may choose `stickyd` (Kafka's `sticky` stays the default),
    asking the service above with a 2 s deadline; JMX remote on a loopback port."""
    if not kafka_jars_built():
        pytest.skip("Kafka jars not built: run `mvn -q -B -f plugins/kafka/pom.xml package`")
    service, _ = stickyd
    properties = {
        "group.streams.assignors": f"sticky,{ASSIGNOR_CLASS}",
        "group.streams.initial.rebalance.delay.ms": "0",
        "stickyd.url": service.url,
        "stickyd.timeout.ms": "2000",
    }
    with apache_kafka_broker(properties, jmx_port=free_port()) as running:
        yield running


def plugin_metrics(broker: ApacheKafka) -> dict[str, float]:
    """The Streams plug-in's request and fallback counters and outage gauge, read over JMX (0 before
    the plug-in registers them)."""
    bean = read_mbeans(broker.jmx).get(STREAMS_BEAN, {})
    return {name: bean.get(name) or 0.0 for name in ("request-total", "fallback-total", "outage")}


def wait_assigned(app: StreamsApp, names: set[str], timeout_s: float = 120.0) -> dict[str, set[str]]:
    """Waits until exactly `names` run, all RUNNING, every task active on exactly one of them and
    every stateful task standing by on another one, held for 2 s; returns the actives per instance."""
    deadline = time.monotonic() + timeout_s
    since: float | None = None
    while time.monotonic() < deadline:
        statuses = {i.name: i.status() or {} for i in app.live()}
        actives = Counter(t for s in statuses.values() for t in s.get("active", []))
        standbys = Counter(t for s in statuses.values() for t in s.get("standby", []))
        settled = (
            set(statuses) == names
            and all(s.get("state") == "RUNNING" for s in statuses.values())
            and set(actives) == TASKS
            and set(actives.values()) == {1}
            and (len(names) < 2 or set(standbys) == {t for t in TASKS if t.startswith("1_")})
        )
        if settled:
            since = since or time.monotonic()
            if time.monotonic() - since >= 2.0:
                return {name: set(s["active"]) for name, s in statuses.items()}
        else:
            since = None
        time.sleep(0.3)
    raise AssertionError(f"not assigned within {timeout_s:.0f} s: {app.running()}")


def test_streams_group_is_assigned_by_stickyd_in_the_broker_and_by_kafkas_sticky_when_stickyd_stops(
    broker: ApacheKafka, stickyd: tuple[ServiceProcess, ExitStack], tmp_path: Path
) -> None:
    """Two instances on the streams protocol (exactly-once) are assigned through stickyd (requests
    counted by the service, each with the restore costs of the stateful tasks, no fallback in the
    broker's log), balanced six and six. Then, while input keeps arriving, a third instance is
    started and stickyd stops before it joins: Kafka's `sticky` assigns the join (one WARN for the
    outage), the newcomer gets work, and every input record is counted exactly once. The instances
    run with the process ids the harness chose for them (what the churn benchmark's orders rely on)."""
    service, stack = stickyd
    config = STREAMS_PROTOCOL | {"processing.guarantee": "exactly_once_v2"}
    ids = {name: uuid.UUID(int=rank) for rank, name in enumerate("abc", start=1)}
    with streams_app(broker.bootstrap, tmp_path, assignor="broker", config=config, process_ids=ids) as app:
        app.choose_assignor("stickyd")
        before = requests_to(service, "/v1/assign/streams")
        app.produce(600, skew=1.5)
        for name in ("a", "b"):
            app.start(name)
        two = wait_assigned(app, {"a", "b"})
        assert sorted(len(tasks) for tasks in two.values()) == [6, 6]
        for name in ("a", "b"):
            assert f"Reading UUID from process file: {ids[name]}" in app.instances[name].log.read_text()
        assert requests_to(service, "/v1/assign/streams") > before
        assert FALLBACK_LINE not in broker.log_text()
        assert app.wait_counts() == dict(app.expected)
        answering = plugin_metrics(broker)
        assert answering["request-total"] >= 1 and answering["outage"] == 0 and answering["fallback-total"] == 0

        producer = threading.Thread(target=produce_slowly, args=(app, 600, 1200))
        producer.start()
        try:
            app.start("c")
            stack.close()  # stickyd stops while c starts and joins, input arriving
            three = wait_assigned(app, {"a", "b", "c"})
        finally:
            producer.join()
        assert three["c"]
        assert app.wait_counts() == dict(app.expected)
        assert broker.log_text().count(FALLBACK_LINE) == 1, broker.log_text()[-3000:]
        down = plugin_metrics(broker)
        assert down["outage"] == 1 and down["fallback-total"] > answering["fallback-total"], down
        assert down["request-total"] > answering["request-total"]  # a request that failed is counted too


def produce_slowly(app: StreamsApp, start: int, records: int, batches: int = 12) -> None:
    """`records` more input records in batches over about six seconds."""
    for batch in range(batches):
        app.produce(records // batches, start=start + batch * (records // batches), skew=1.5)
        time.sleep(0.5)
