"""Several stickyd replicas in the Python client's URL (as in the Java plug-ins' `stickyd.url`),
against a real `stickyd serve`: a replica that refuses connections or does not answer within its
share of the timeout moves the request on to the next one; the kafka-python and aiokafka assignors'
`assign_consumer_or_solve` then gets the service's answer, not its in-process fallback."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from stickyd.cli.child_service import ServiceProcess
from stickyd.client.fallback import assign_consumer_or_solve
from stickyd.client.http import AsyncStickydClient, StickydClient
from tests.conftest import load_example


def refusing_url() -> str:
    """A loopback address where nothing listens."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


@pytest.fixture
def hanging_url() -> Iterator[str]:
    """A replica that accepts the request and answers after 5 s (a hung service)."""

    class Slow(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            time.sleep(5)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_refusing_replica_moves_on_to_the_next(service: ServiceProcess) -> None:
    problem = load_example("consumer-kip54-unequal.json")
    with StickydClient(f"{refusing_url()}, {service.url}/", timeout=10, retries=1) as client:
        solution = client.assign_consumer(problem)
        assert client.health()["ready"] is True
    assert solution.assignment


def test_a_hung_replica_keeps_only_its_share_of_the_timeout(service: ServiceProcess, hanging_url: str) -> None:
    """Two replicas and a 4 s timeout: the hung one is given up after 2 s, the other answers."""
    problem = load_example("consumer-kip54-unequal.json")
    started = time.monotonic()
    solution, error = assign_consumer_or_solve(f"{hanging_url},{service.url}", problem, timeout_s=4.0)
    took = time.monotonic() - started
    assert error is None, error
    assert solution.assignment
    assert 1.9 <= took < 4.0, took


def test_every_replica_down_is_the_fallback_with_the_error() -> None:
    problem = load_example("consumer-kip54-unequal.json")
    solution, error = assign_consumer_or_solve(f"{refusing_url()},{refusing_url()}", problem, timeout_s=2.0)
    assert error is not None
    assert solution.assignment


def test_the_async_client_moves_on_too(service: ServiceProcess) -> None:
    async def ask() -> bool:
        async with AsyncStickydClient(f"{refusing_url()},{service.url}", timeout=10, retries=1) as client:
            solution = await client.assign_consumer(load_example("consumer-kip54-unequal.json"))
            return bool(solution.assignment)

    assert asyncio.run(ask())


def test_a_url_list_without_a_url_is_refused() -> None:
    with pytest.raises(ValueError, match="base_url names no URL"):
        StickydClient(" , ")
