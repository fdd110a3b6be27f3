"""The v1 API through FastAPI's TestClient: every endpoint, every error path, the settings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from stickyd.models import ConsumerSolution
from stickyd.service.http.app import create_app
from stickyd.service.settings import Settings
from tests.conftest import assert_valid, load_example


def _client(**settings: Any) -> Iterator[TestClient]:
    app = create_app(Settings(workers=1, **settings))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    yield from _client(max_partitions=10_000, max_members=50, max_body_bytes=200_000, max_time_limit_ms=5_000)


def test_assign_consumer_answers_the_contract(client: TestClient) -> None:
    problem = load_example("consumer-kafka10121-join.json")
    response = client.post("/v1/assign/consumer", json=problem)
    assert response.status_code == 200
    solution = ConsumerSolution.model_validate(response.json())
    assert_valid(problem, solution)
    assert solution.stats.moves == 2 and solution.stats.optimal


def test_assign_streams_answers_the_contract(client: TestClient) -> None:
    from stickyd.models.streams.problem import StreamsProblem, StreamsSolution
    from stickyd.models.streams.validation import validate_streams_solution

    problem = load_example("streams-kafka10121.json")
    response = client.post("/v1/assign/streams", json=problem)
    assert response.status_code == 200
    solution = StreamsSolution.model_validate(response.json())
    assert validate_streams_solution(StreamsProblem.model_validate(problem), solution) == []
    assert solution.stats.active_moves == 2 and solution.stats.warmups == 2
    bad = {"subtopologies": [{"id": "0", "partitions": 1}], "clients": [{"id": "a", "capacity": 0}]}
    response = client.post("/v1/assign/streams", json=bad)
    assert response.status_code == 422 and response.json()["field"] == "clients[0].capacity"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"{not json", "body"),
        (b"[1, 2]", "body"),
        (json.dumps({"topics": {"t": -1}, "members": [{"id": "a", "topics": ["t"]}]}).encode(), "topics.t"),
        (json.dumps({"topics": {"t": 1}, "members": [{"id": "a", "topics": ["t"]}] * 2}).encode(), "members[1].id"),
        (
            json.dumps(
                {"topics": {"t": 1}, "members": [{"id": "a", "topics": ["t"]}], "options": {"strategy": "magic"}}
            ).encode(),
            "options.strategy",
        ),
    ],
)
def test_bad_bodies_get_422_naming_the_field(client: TestClient, body: bytes, field: str) -> None:
    response = client.post("/v1/assign/consumer", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert response.json()["field"] == field
    assert response.json()["detail"].startswith(field)


@pytest.mark.parametrize("subtopologies", [5, "0", {"id": "0"}, [5]])
def test_streams_bodies_of_the_wrong_shape_get_422_naming_subtopologies(client: TestClient, subtopologies: Any) -> None:
    """A scalar or mapping where the list of subtopologies belongs is the client's mistake, never a 5xx."""
    body = {"subtopologies": subtopologies, "clients": [{"id": "a"}]}
    response = client.post("/v1/assign/streams", json=body)
    assert response.status_code == 422
    assert response.json()["field"].startswith("subtopologies")


def test_over_the_size_limits_gets_413_naming_the_limit(client: TestClient) -> None:
    many_partitions = {"topics": {"t": 20_000}, "members": [{"id": "a", "topics": ["t"]}]}
    response = client.post("/v1/assign/consumer", json=many_partitions)
    assert response.status_code == 413 and "10000" in response.json()["detail"]
    many_members = {"topics": {"t": 1}, "members": [{"id": f"m{i}", "topics": ["t"]} for i in range(51)]}
    response = client.post("/v1/assign/consumer", json=many_members)
    assert response.status_code == 413 and "STICKYD_MAX_MEMBERS" in response.json()["detail"]
    huge = b'{"topics": {}, "members": [], "pad": "' + b"x" * 300_000 + b'"}'
    response = client.post("/v1/assign/consumer", content=huge, headers={"content-type": "application/json"})
    assert response.status_code == 413 and "200000 bytes" in response.json()["detail"]


def test_time_limit_is_capped_to_the_server_maximum(client: TestClient) -> None:
    problem = {**load_example("consumer-kip54-equal.json"), "options": {"time_limit_ms": 60_000}}
    response = client.post("/v1/assign/consumer", json=problem)
    assert response.status_code == 200
    assert any("capped to 5000" in w for w in response.json()["stats"]["warnings"])


def test_health_reports_a_ready_pool(client: TestClient) -> None:
    body = client.get("/v1/health").json()
    assert body["status"] == "ok" and body["ready"] is True and body["workers"] == 1


def test_metrics_count_requests_solves_and_rejections(client: TestClient) -> None:
    client.post("/v1/assign/consumer", json=load_example("consumer-kip54-equal.json"))
    client.post("/v1/assign/consumer", content=b"nope", headers={"content-type": "application/json"})
    text = client.get("/metrics").text
    assert 'stickyd_requests_total{endpoint="/v1/assign/consumer",status="200",strategy="optimal"}' in text
    assert 'stickyd_rejected_total{endpoint="/v1/assign/consumer",status="422"}' in text
    assert "stickyd_solve_seconds_bucket" in text
    assert "stickyd_request_seconds_bucket" in text


def test_openapi_embeds_the_contract_and_its_examples(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    body = schema["paths"]["/v1/assign/consumer"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"]["$ref"].endswith("/ConsumerProblem")
    assert "consumer-kip54-equal" in body["examples"]
    assert "ConsumerMember" in schema["components"]["schemas"]
    assert client.get("/docs").status_code == 200 and "/docs-assets/swagger-ui-bundle.js" in client.get("/docs").text


def test_unknown_routes_and_methods_get_a_4xx_with_detail(client: TestClient) -> None:
    for response in (client.get("/v1/nope"), client.get("/v1/assign/consumer")):
        assert 400 <= response.status_code < 500
        assert response.json()["detail"]


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STICKYD_PORT", "9123")
    monkeypatch.setenv("STICKYD_WORKERS", "3")
    monkeypatch.setenv("STICKYD_MAX_TIME_LIMIT_MS", "777")
    settings = Settings()
    assert (settings.port, settings.workers, settings.max_time_limit_ms) == (9123, 3, 777)
    assert settings.host == "127.0.0.1"
    monkeypatch.setenv("STICKYD_PORT", "not-a-port")
    with pytest.raises(ValueError, match="port"):
        Settings()


def test_a_solve_that_overruns_gets_the_fallback_answer() -> None:
    """The service keeps time too: with a worker busy past the limit, the fallback answers."""
    assert Settings().response_margin_ms <= 250
    big = {
        "topics": {f"t{i}": 300 for i in range(30)},
        "members": [{"id": f"m{i}", "topics": [f"t{j}" for j in range(30) if (i + j) % 3]} for i in range(200)],
        "copartitioned": [["t0", "t1"]],
        "options": {"time_limit_ms": 1},
    }
    for client in _client(max_time_limit_ms=1):
        response = client.post("/v1/assign/consumer", json=big)
        assert response.status_code == 200
        stats = response.json()["stats"]
        assert stats["fallback"] is True and stats["optimal"] is False
        assert_valid(big, ConsumerSolution.model_validate(response.json()))
