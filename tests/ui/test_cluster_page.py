"""The web page's Cluster view in headless chromium: a `stickyd serve` watching the session's real
Kafka broker lists that cluster's KIP-848 consumer group as its coordinator describes it (members,
lag, measured rate), as GET /v1/cluster/groups gives it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from stickyd.cli.child_service import ServiceProcess, running_service
from tests.kafka.apache_kafka import ApacheKafka
from tests.kafka.consumer_protocol import Member, settle
from tests.ui.conftest import launch_chromium

TOPIC, GROUP = "ui-cluster", "ui-cluster-group"


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


def _listed(service: ServiceProcess, timeout_s: float = 20.0) -> dict[str, Any]:
    """The group as GET /v1/cluster/groups lists it, once its coordinator describes its member."""
    deadline = time.monotonic() + timeout_s
    groups: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        groups = httpx.get(f"{service.url}/v1/cluster/groups", timeout=30).json()["groups"]
        found = [g for g in groups if g["group_id"] == GROUP and g["members"]]
        if found:
            return found[0]
        time.sleep(0.25)
    raise AssertionError(f"{GROUP} not listed within {timeout_s} s: {groups}")
