"""A hostile client against a real `stickyd serve`: every input that used to crash a worker, hang
a connection or be silently accepted gets a 4xx naming the field; the service stays healthy and
logs nothing at ERROR (a client's mistake is not a server fault)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest

from stickyd.cli.child_service import ServiceProcess, running_service

JSON = {"content-type": "application/json"}
BODY_TIMEOUT_S = 1.0


@pytest.fixture(scope="module")
def hostile() -> Iterator[ServiceProcess]:
    """One service for the module, with a short body deadline so the slow client test is quick."""
    env = {"STICKYD_WORKERS": "1", "STICKYD_MAX_PARTITIONS": "200000", "STICKYD_BODY_TIMEOUT_S": str(BODY_TIMEOUT_S)}
    with running_service(env) as running:
        yield running


def _post(service: ServiceProcess, kind: str, body: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.post(f"{service.url}/v1/assign/{kind}", content=body, headers=headers or JSON, timeout=60)


def _consumer(**member: Any) -> dict[str, Any]:
    return {"topics": {"t": 4}, "members": [{"id": "a", "topics": ["t"], **member}]}


def _streams(**client: Any) -> dict[str, Any]:
    return {"subtopologies": [{"id": "0", "partitions": 2}], "clients": [{"id": "a", **client}]}


BIG = 2**70
CASES: list[tuple[str, str, bytes, int, str]] = [
    ("nested-100k-arrays", "consumer", b"[" * 100_000 + b"]" * 100_000, 422, "body"),
    ("nested-100k-objects", "consumer", b'{"a":' * 100_000 + b"1" + b"}" * 100_000, 422, "body"),
    (
        "generation-over-64-bits",
        "consumer",
        json.dumps(_consumer(generation=BIG)).encode(),
        422,
        "members[0].generation",
    ),
    (
        "owned-partition-over-64-bits",
        "consumer",
        json.dumps(_consumer(owned={"t": [BIG]}, generation=1)).encode(),
        422,
        "members[0].owned.t[0]",
    ),
    (
        "max-imbalance-10-to-30",
        "consumer",
        json.dumps({**_consumer(), "options": {"max_imbalance": 10**30}}).encode(),
        422,
        "options.max_imbalance",
    ),
    (
        "partition-count-over-int32",
        "consumer",
        json.dumps({**_consumer(), "topics": {"t": 2**31}}).encode(),
        413,
        "topics",
    ),
    ("integer-of-5000-digits", "consumer", b'{"topics": {"t": ' + b"9" * 5000 + b'}, "members": []}', 422, "body"),
    ("capacity-over-64-bits", "streams", json.dumps(_streams(capacity=BIG)).encode(), 422, "clients[0].capacity"),
    ("lag-over-64-bits", "streams", json.dumps(_streams(lags={"0_1": BIG})).encode(), 422, "clients[0].lags.0_1"),
    (
        "task-name-with-5000-digit-partition",
        "streams",
        json.dumps(_streams(active=["0_" + "7" * 5000])).encode(),
        422,
        "clients[0].active[0]",
    ),
    (
        "subtopologies-a-number",
        "streams",
        json.dumps({"subtopologies": 5, "clients": [{"id": "a"}]}).encode(),
        422,
        "subtopologies",
    ),
    ("string-where-int", "consumer", json.dumps({"topics": {"t": "4"}, "members": []}).encode(), 422, "topics.t"),
    ("duplicate-key", "consumer", b'{"topics": {"t": 1}, "topics": {"t": 2}, "members": []}', 422, "topics"),
    (
        "duplicate-key-nested",
        "consumer",
        b'{"topics": {"t": 1}, "members": [{"id": "a", "id": "b", "topics": ["t"]}]}',
        422,
        "id",
    ),
    ("not-utf8", "consumer", b'{"topics": "\xff\xfe"}', 422, "body"),
    (
        "streams-tasks-over-the-limit",
        "streams",
        json.dumps({"subtopologies": [{"id": "0", "partitions": 300_000}], "clients": [{"id": "a"}]}).encode(),
        413,
        "subtopologies",
    ),
]


@pytest.mark.parametrize(("name", "kind", "body", "status", "field"), CASES, ids=[c[0] for c in CASES])
def test_hostile_bodies_get_a_4xx_naming_the_field(
    hostile: ServiceProcess, name: str, kind: str, body: bytes, status: int, field: str
) -> None:
    response = _post(hostile, kind, body)
    assert response.status_code == status, response.text
    answer = response.json()
    assert answer["field"] == field, answer
    assert answer["detail"].startswith(field)
    assert len(answer["detail"]) < 400 or "2147483647" in answer["detail"], answer["detail"][:400]


@pytest.mark.parametrize(
    "content_type", [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
)
def test_only_json_bodies_are_accepted(hostile: ServiceProcess, content_type: str | None) -> None:
    """A browser form or a text/plain post from any web page cannot make the service solve."""
    headers = {"content-type": content_type} if content_type else {}
    body = json.dumps(_consumer()).encode()
    response = httpx.post(f"{hostile.url}/v1/assign/consumer", content=body, headers=headers, timeout=30)
    assert response.status_code == 415 and response.json()["field"] == "content-type"
    assert _post(hostile, "consumer", body, {"content-type": "application/json; charset=utf-8"}).status_code == 200


def _raw(service: ServiceProcess) -> socket.socket:
    url = urlparse(service.url)
    return socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=10)


def _headers(length: int) -> bytes:
    return (
        f"POST /v1/assign/consumer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


def test_a_body_that_stalls_gets_408_at_the_body_deadline(hostile: ServiceProcess) -> None:
    with _raw(hostile) as sock:
        sock.sendall(_headers(1000) + b'{"topics": ')
        started = time.monotonic()
        answer = sock.recv(65536).decode()
        waited = time.monotonic() - started
        while not answer.endswith("}"):
            more = sock.recv(65536).decode()
            if not more:
                break
            answer += more
    assert answer.startswith("HTTP/1.1 408"), answer
    assert "STICKYD_BODY_TIMEOUT_S" in answer
    assert BODY_TIMEOUT_S - 0.1 <= waited <= BODY_TIMEOUT_S + 1.0


def test_a_client_that_disconnects_mid_body_is_one_info_line(hostile: ServiceProcess) -> None:
    before = hostile.log_text().count("client disconnected")
    for _ in range(5):
        with _raw(hostile) as sock:
            sock.sendall(_headers(100_000) + b'{"topics": {"t": 1}, ')
            time.sleep(0.05)
    deadline = time.monotonic() + 5
    while hostile.log_text().count("client disconnected") < before + 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = [line for line in hostile.log_text().splitlines() if "client disconnected" in line]
    assert len(lines) == before + 5 and all(" INFO " in line for line in lines), lines
    assert "Traceback" not in hostile.log_text()


def test_after_all_that_the_service_is_healthy_and_logged_no_error(hostile: ServiceProcess) -> None:
    """Runs last in the module: nothing above was a server fault."""
    health = httpx.get(f"{hostile.url}/v1/health", timeout=10).json()
    assert health["ready"] and health["restarts"] == 0, health
    text = httpx.get(f"{hostile.url}/metrics", timeout=10).text
    assert 'stickyd_rejected_total{endpoint="/v1/assign/consumer",status="415"}' in text
    assert 'stickyd_rejected_total{endpoint="/v1/assign/consumer",status="408"}' in text
    log = hostile.log_text()
    assert " ERROR " not in log and "Traceback" not in log, log[-3000:]


def test_connections_that_never_finish_their_headers_are_closed_at_the_header_deadline() -> None:
    """Header slow-loris: 30 connections that send part of a request line and headers, then
    nothing, are closed by the server within STICKYD_HEADER_TIMEOUT_S (+ slack); meanwhile and
    after, the service answers."""
    with running_service({"STICKYD_WORKERS": "1", "STICKYD_HEADER_TIMEOUT_S": "1"}) as running:
        address = urlparse(running.url)
        sockets = []
        for i in range(30):
            s = socket.create_connection((address.hostname, address.port), timeout=10)
            s.sendall(b"POST /v1/assign/consumer HTTP/1.1\r\nHost: x\r\n" if i % 2 else b"GET /v1/hea")
            sockets.append(s)
        started = time.monotonic()
        assert httpx.get(f"{running.url}/v1/health", timeout=10).status_code == 200
        closed_after = []
        for s in sockets:
            with s:
                assert s.recv(1024) == b"", "the server must close, not answer, a connection without headers"
                closed_after.append(time.monotonic() - started)
        assert max(closed_after) < 1 + 3.0, closed_after
        assert httpx.get(f"{running.url}/v1/health", timeout=10).status_code == 200
