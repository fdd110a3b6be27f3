"""The web page's Cluster view in headless chromium: a `stickyd serve` watching the session's real
Kafka broker lists that cluster's KIP-848 consumer groups as their coordinators describe them
(kind, members, generation, lag, measured rate, the busiest member now and in stickyd's answers,
solved once per watcher sample), as GET /v1/cluster/groups gives them; a group opens on its
members' bars. Screenshots land in pytest's temporary folder."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from stickyd.cli.child_service import ServiceProcess, running_service
from tests.kafka.apache_kafka import ApacheKafka
from tests.kafka.consumer_protocol import Member, settle
from tests.ui.conftest import launch_chromium

TOPIC, GROUP = "ui-cluster", "ui-cluster-group"
HOT_TOPIC, HOT_GROUP, CLASSIC_GROUP = "ui-hot", "ui-hot-group", "ui-hot-classic"


@pytest.fixture(scope="module")
def watching(apache_kafka: ApacheKafka) -> Iterator[ServiceProcess]:
    env = {"STICKYD_WORKERS": "1", "STICKYD_WATCH_BOOTSTRAP_SERVERS": apache_kafka.bootstrap,
           "STICKYD_WATCH_INTERVAL_S": "0.5"}  # fmt: skip
    with running_service(env) as service:
        yield service


def test_the_cluster_page_lists_the_watched_clusters_group_and_its_members(
    apache_kafka: ApacheKafka, watching: ServiceProcess
) -> None:
    from playwright.sync_api import sync_playwright

    admin = AdminClient({"bootstrap.servers": apache_kafka.bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=1)])[TOPIC].result(timeout=30)
    member = Member(apache_kafka.bootstrap, GROUP, "ui-m0", [TOPIC], assignor="uniform")
    try:
        settle([member], {(TOPIC, p) for p in range(3)}, admin, GROUP)
        answer = _listed(watching)
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright)
            try:
                page = browser.new_page()
                page.goto(f"{watching.url}/ui/#/cluster")
                page.wait_for_selector("body[data-ready=cluster]")
                row = page.locator(f"tr[data-cluster-group='{GROUP}']").inner_text()
            finally:
                browser.close()
    finally:
        member.leave()
    assert answer["protocol"] == "consumer" and answer["assignor"] == "uniform"
    assert [m["client_id"] for m in answer["members"]] == ["ui-m0"]
    assert sorted(answer["members"][0]["assignment"][TOPIC]) == [0, 1, 2]
    assert answer["lag"] == {TOPIC: [None, None, None]} and answer["total_lag"] == 0
    for shown in (GROUP, "consumer", "uniform", "ui-m0", "3 partitions"):
        assert shown in row, row


def test_a_group_with_a_hot_partition_pair_shows_stickyds_lower_bottleneck_and_its_members_bars(
    apache_kafka: ApacheKafka, watching: ServiceProcess, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Two members on Kafka's `range` assignor share four partitions; records go to partitions 0
    and 1 only, which `range` gives to one member: stickyd's load answer splits them. A classic
    group of one member on the same topic is listed as `classic`, nothing to move."""
    from playwright.sync_api import sync_playwright

    shots = tmp_path_factory.mktemp("ui-cluster-screenshots")
    admin = AdminClient({"bootstrap.servers": apache_kafka.bootstrap})
    admin.create_topics([NewTopic(HOT_TOPIC, num_partitions=4, replication_factor=1)])[HOT_TOPIC].result(timeout=30)
    _rates(watching, lambda rates: HOT_TOPIC in rates)  # sampled once before any record: a rate has a start
    _produce(apache_kafka.bootstrap, {0: 3000, 1: 3000})
    _rates(watching, lambda rates: all((rates.get(HOT_TOPIC) or [0, 0])[p] for p in (0, 1)))
    members = [Member(apache_kafka.bootstrap, HOT_GROUP, f"hot-m{i}", [HOT_TOPIC], assignor="range") for i in (0, 1)]
    try:
        with classic_member(apache_kafka.bootstrap):
            classic = _listed(watching, CLASSIC_GROUP, lambda g: g["members"] and g["members"][0]["partitions"] == 4)
        settle(members, {(HOT_TOPIC, p) for p in range(4)}, admin, HOT_GROUP)
        group = _listed(watching, HOT_GROUP, _two_each_and_compared)
        cached = _cached_within_a_sample(watching)
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright)
            try:
                page = browser.new_page(viewport={"width": 1500, "height": 900})
                page.goto(f"{watching.url}/ui/#/cluster")
                page.wait_for_selector("body[data-ready=cluster]")
                row = page.locator(f"tr[data-cluster-group='{HOT_GROUP}']")
                cells = [row.locator(f"td[data-figure={key}]").inner_text() for key in ("count", "load")]
                page.screenshot(path=str(shots / "cluster.png"), full_page=True)
                row.locator("a").click()
                page.wait_for_selector("body[data-ready=cluster-group]")
                bars = page.locator("#cluster-loads rect[data-member]").count()
                count_bars = page.locator("#cluster-counts rect[data-member]").count()
                stickyd_bars = page.locator("#cluster-stickyd-loads rect[data-member]").count()
                facts = page.locator("#cluster-compare").inner_text()
                page.screenshot(path=str(shots / "cluster-group.png"), full_page=True)
            finally:
                browser.close()
    finally:
        for member in members:
            member.leave()
    now, stickyd, measured = group["bottleneck"], group["stickyd"], group["rates"][HOT_TOPIC]
    assert group["kind"] == "consumer" and group["generation"] >= 1 and group["assignor"] == "range"
    hot = measured[0] + measured[1]
    assert measured[2:] == [0, 0] and now == {"count": 2, "load": hot}, group  # range: partitions 0 and 1 together
    assert sorted(m["load"] for m in group["members"]) == [0, hot]
    assert stickyd["by_load"]["bottleneck"]["load"] == max(measured[:2]) and stickyd["by_load"]["moves"] >= 1
    assert stickyd["by_count"]["bottleneck"]["count"] == 2
    shown = [[int(x.replace(",", "")) for x in cell.split(" / ")] for cell in cells]
    assert shown[0] == [2, 2] and shown[1][1] < shown[1][0], cells  # the page: stickyd's load bottleneck is lower
    assert (bars, count_bars, stickyd_bars) == (2, 2, 2) and "balance load" in facts, facts
    assert classic["kind"] == "classic" and classic["assignor"] == "range" and classic["bottleneck"]["count"] == 4
    assert classic["stickyd"]["by_count"]["moves"] == 0 and classic["stickyd"]["by_load"]["bottleneck"]["count"] == 4
    assert cached
    unknown = httpx.get(f"{watching.url}/v1/cluster/groups/no-such-group", timeout=30)
    assert unknown.status_code == 404 and unknown.json()["detail"] == "group_id: no-such-group: no such group"


@contextmanager
def classic_member(bootstrap: str) -> Iterator[None]:
    """One member of a classic group (Kafka's `range`, eager) on the hot topic, polled in the background."""
    config = {"bootstrap.servers": bootstrap, "group.id": CLASSIC_GROUP, "client.id": "classic-m0",
              "partition.assignment.strategy": "range", "enable.auto.commit": False}  # fmt: skip
    consumer = Consumer(config)
    consumer.subscribe([HOT_TOPIC])
    stop = threading.Event()

    def keep_polling() -> None:
        while not stop.is_set():
            consumer.poll(0.05)

    poller = threading.Thread(target=keep_polling)
    poller.start()
    try:
        yield
    finally:
        stop.set()
        poller.join(timeout=10)
        consumer.close()


def _two_each_and_compared(group: dict[str, Any]) -> bool:
    return [m["partitions"] for m in group["members"]] == [2, 2] and bool(group["stickyd"]["by_load"])


def _cached_within_a_sample(service: ServiceProcess, tries: int = 20) -> bool:
    """Two reads of the group within one watcher sample give the very same answers (solve times
    included): stickyd solved once."""
    for _ in range(tries):
        first, second = (httpx.get(f"{service.url}/v1/cluster/groups/{HOT_GROUP}", timeout=30).json() for _ in "ab")
        if first["stickyd"]["sampled_at"] == second["stickyd"]["sampled_at"]:
            return bool(first["stickyd"] == second["stickyd"] and first["stickyd"]["by_load"]["time_ms"] > 0)
    raise AssertionError(f"no two reads within one sample in {tries} tries")


def _produce(bootstrap: str, records: dict[int, int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for partition, count in records.items():
        for i in range(count):
            producer.produce(HOT_TOPIC, value=b"%d" % i, partition=partition)
            if i % 1000 == 999:
                producer.poll(0)
    assert producer.flush(30) == 0


def _rates(service: ServiceProcess, until: Any, timeout_s: float = 20.0) -> dict[str, list[int | None]]:
    """GET /v1/cluster/rates once `until` holds for its topics."""
    deadline = time.monotonic() + timeout_s
    topics: dict[str, list[int | None]] = {}
    while time.monotonic() < deadline:
        topics = httpx.get(f"{service.url}/v1/cluster/rates", timeout=30).json()["topics"]
        if until(topics):
            return topics
        time.sleep(0.25)
    raise AssertionError(f"rates not as expected within {timeout_s} s: {topics}")


def _listed(
    service: ServiceProcess, group_id: str = GROUP, until: Any = lambda g: g["members"], timeout_s: float = 20.0
) -> dict[str, Any]:
    """The group as GET /v1/cluster/groups lists it, once `until` holds (its coordinator describes a member)."""
    deadline = time.monotonic() + timeout_s
    groups: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        groups = httpx.get(f"{service.url}/v1/cluster/groups", timeout=30).json()["groups"]
        found = [g for g in groups if g["group_id"] == group_id and until(g)]
        if found:
            return found[0]
        time.sleep(0.25)
    raise AssertionError(f"{group_id} not listed within {timeout_s} s: {groups}")
