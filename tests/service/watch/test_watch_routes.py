"""The watcher seen through the app (FastAPI's TestClient, real solver processes): "live" without a
watched cluster or without a measurement is a 422 naming partition_weights on both doors that take
weights (POST /v1/assign/consumer, the group resources), /v1/cluster answers 404 when nothing is
watched, and the watcher's metrics are served either way."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from stickyd.cli.child_service import free_port
from stickyd.service.http.app import create_app
from stickyd.service.settings import Settings

LIVE = {
    "topics": {"orders": 4},
    "partition_weights": "live",
    "members": [{"id": "a", "topics": ["orders"]}, {"id": "b", "topics": ["orders"]}],
    "options": {"balance": "load"},
}
WATCH_METRICS = {
    "stickyd_watch_sample_age_seconds",
    "stickyd_watch_samples_total",
    "stickyd_watch_sample_errors_total",
    "stickyd_watch_partitions",
}


def _client(tmp_path: Path, **settings: Any) -> Iterator[TestClient]:
    app = create_app(Settings(workers=1, data_dir=tmp_path, **settings))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


@pytest.fixture(scope="module")
def unwatched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    yield from _client(tmp_path_factory.mktemp("unwatched"))


@pytest.fixture(scope="module")
def unreachable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """Watching a loopback port nobody listens on: the watcher never has a measurement."""
    yield from _client(
        tmp_path_factory.mktemp("unreachable"),
        watch_bootstrap_servers=f"127.0.0.1:{free_port()}",
        watch_interval_s=0.2,
        watch_config={"socket.connection.setup.timeout.ms": "1000"},
    )


def _served(client: TestClient) -> dict[str, float]:
    text = client.get("/metrics").text
    return {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}


@pytest.mark.parametrize("door", ["assign", "groups"])
def test_live_without_a_watched_cluster_is_a_422_naming_partition_weights(unwatched: TestClient, door: str) -> None:
    if door == "assign":
        answer = unwatched.post("/v1/assign/consumer", json=LIVE)
        field = "partition_weights"
    else:
        body = {"kind": "consumer", "generation": -1, "problem": LIVE}
        answer = unwatched.post("/v1/groups/orders-app/rebalance", json=body)
        field = "problem.partition_weights"
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == field
    assert "watches no Kafka cluster (STICKYD_WATCH_BOOTSTRAP_SERVERS is unset)" in answer.json()["reason"]


def test_the_cluster_routes_are_404_and_the_watch_metrics_zero_when_nothing_is_watched(unwatched: TestClient) -> None:
    for path in ("/v1/cluster/rates", "/v1/cluster/groups", "/v1/cluster/groups/orders-app"):
        answer = unwatched.get(path)
        assert answer.status_code == 404 and "watches no Kafka cluster" in answer.json()["detail"]
    served = _served(unwatched)
    assert set(served) >= WATCH_METRICS
    assert {name: served[name] for name in WATCH_METRICS} == dict.fromkeys(WATCH_METRICS, 0.0)


def test_live_before_any_measurement_is_a_422_naming_the_topic(unreachable: TestClient) -> None:
    answer = unreachable.post("/v1/assign/consumer", json=LIVE)
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == "partition_weights"
    assert "no measurement yet for topic orders" in answer.json()["reason"]
    rates = unreachable.get("/v1/cluster/rates").json()
    assert rates["sampled_at"] is None and rates["topics"] == {}


def test_an_unreachable_cluster_counts_errors_and_the_sample_age_grows(unreachable: TestClient) -> None:
    import time

    deadline = time.monotonic() + 20
    while _served(unreachable)["stickyd_watch_sample_errors_total"] < 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    served = _served(unreachable)
    assert served["stickyd_watch_sample_errors_total"] >= 1
    assert served["stickyd_watch_samples_total"] == 0
    assert served["stickyd_watch_sample_age_seconds"] > 0


def test_a_kafka_setting_librdkafka_refuses_stops_the_service_at_start_naming_it(tmp_path: Path) -> None:
    from stickyd.service.watch.watcher import WatchUnavailable

    app = create_app(
        Settings(workers=1, data_dir=tmp_path, watch_bootstrap_servers="127.0.0.1:9", watch_config={"no.such": "x"})
    )
    with pytest.raises(WatchUnavailable, match="no.such"), TestClient(app):
        pass


def test_the_cluster_routes_need_a_token_and_take_any_tenants(tmp_path: Path) -> None:
    """401 without a token; with a token of any tenant, the route answers (here: 404, nothing watched)."""
    from stickyd.service.store.tokens import create_token

    for client in _client(tmp_path, auth="required"):
        tokens = [create_token(client.app.state.database, tenant) for tenant in ("team-a", "team-b")]  # type: ignore[attr-defined]
        for path in ("/v1/cluster/rates", "/v1/cluster/groups", "/v1/cluster/groups/orders-app"):
            answer = client.get(path)
            assert answer.status_code == 401, answer.text
            assert answer.headers["www-authenticate"].startswith("Bearer")
            for token in tokens:
                assert client.get(path, headers={"Authorization": f"Bearer {token}"}).status_code == 404
