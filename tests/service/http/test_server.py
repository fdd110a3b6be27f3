"""Against a real `stickyd serve` process on 127.0.0.1: same answers as the CLI, concurrency
with time limits kept, health answering while solves run, a dead worker replaced."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from stickyd.cli.child_service import ServiceProcess
from stickyd.client.http import StickydClient, StickydError
from stickyd.models import ConsumerSolution
from tests.conftest import CONTRACT, assert_valid
from tests.processes import solver_processes
from tests.service.health_probe import probe_health

JSON = {"content-type": "application/json"}


def _without_time(response: dict[str, Any]) -> dict[str, Any]:
    return {**response, "stats": {k: v for k, v in response["stats"].items() if k != "time_ms"}}


@pytest.mark.parametrize("path", sorted(CONTRACT.glob("*.json")), ids=lambda p: p.name)
def test_service_and_cli_give_identical_answers(service: ServiceProcess, path: Path) -> None:
    kind = "streams" if path.name.startswith("streams") else "consumer"
    cli = subprocess.run(
        [sys.executable, "-m", "stickyd.cli", "solve", kind, str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    over_http = httpx.post(f"{service.url}/v1/assign/{kind}", content=path.read_bytes(), headers=JSON).json()
    assert _without_time(over_http) == _without_time(json.loads(cli.stdout))


def test_client_raises_the_servers_detail(service: ServiceProcess) -> None:
    with StickydClient(service.url) as client, pytest.raises(StickydError) as caught:
        client.assign_consumer({"topics": {"t": 1}, "members": [{"id": "", "topics": ["t"]}]})
    assert caught.value.status == 422 and caught.value.field == "members[0].id"


def test_client_retries_until_it_gives_up_on_a_closed_port() -> None:
    from stickyd.cli.child_service import free_port

    client = StickydClient(f"http://127.0.0.1:{free_port()}", timeout=1, retries=2)
    with pytest.raises(httpx.ConnectError):
        client.health()
    started = time.monotonic()
    with pytest.raises(httpx.ConnectError):
        client.assign_consumer({"topics": {}, "members": [{"id": "a", "topics": []}]})
    assert time.monotonic() - started < 5


def _problem(partitions: int, members: int, limit_ms: int, seed: int) -> dict[str, Any]:
    topics = {f"t{i}": partitions // 10 for i in range(10)}
    names = sorted(topics)
    return {
        "topics": topics,
        "members": [{"id": f"m{i}", "topics": names[: 1 + (i + seed) % 10]} for i in range(members)],
        "options": {"time_limit_ms": limit_ms},
    }


def test_64_concurrent_requests_are_answered_in_time_while_health_stays_fast(service: ServiceProcess) -> None:
    shapes = [(100, 10, 1000), (1000, 50, 1500), (10_000, 200, 3000), (100, 10, 500)]
    problems = [_problem(*shapes[i % len(shapes)], seed=i) for i in range(64)]
    bodies = [json.dumps(p).encode() for p in problems]

    # timed to the answer's last byte; parsed after all 64 are in, so that no answer waits for this
    # process's event loop to finish parsing another (the service's time, not this process's)
    async def one(http: httpx.AsyncClient, body: bytes) -> tuple[float, httpx.Response]:
        started = time.monotonic()
        response = await http.post("/v1/assign/consumer", content=body, headers=JSON)
        return time.monotonic() - started, response

    async def run() -> list[tuple[float, httpx.Response]]:
        async with httpx.AsyncClient(base_url=service.url, timeout=30) as http:
            return await asyncio.gather(*(one(http, b) for b in bodies))

    # the probe runs in its own process: this one is busy with 64 requests under one GIL
    ctx = multiprocessing.get_context("spawn")
    ready, stop, times = ctx.Event(), ctx.Event(), ctx.Queue()
    probe = ctx.Process(target=probe_health, args=(service.url, ready, stop, times))
    probe.start()
    assert ready.wait(timeout=30), "the health probe did not start"
    try:
        results = asyncio.run(run())
    finally:
        stop.set()
        health_times = times.get(timeout=30)
        probe.join(timeout=10)
    for problem, (elapsed, response) in zip(problems, results, strict=True):
        assert response.status_code == 200, response.text
        solution = ConsumerSolution.model_validate_json(response.content)
        assert_valid(problem, solution)
        assert elapsed <= problem["options"]["time_limit_ms"] / 1000 + 0.25, (elapsed, solution.stats)
    # fast while 64 solves run on two cores: 95% under 100 ms, and no probe ever near a timeout
    ordered = sorted(health_times)
    assert ordered and ordered[int(0.95 * (len(ordered) - 1))] < 0.1 and ordered[-1] < 0.25, ordered[-5:]


def test_a_dead_solver_process_is_replaced(service: ServiceProcess) -> None:
    """Every solver process killed at once (the working ones, the fallback's and the warm spares):
    the working ones are replaced (counted as restarts), new spares are warmed, and requests are
    solved again, not answered by the fallback."""
    with StickydClient(service.url, timeout=60) as client:
        working = client.health()["worker_pids"]
        solvers = solver_processes(service.pid)
        assert working and set(working) <= solvers
        for pid in solvers:
            os.kill(pid, signal.SIGKILL)

        def recovered(health: dict[str, Any]) -> bool:
            # a killed spare is started again but is no restart: only working processes count
            return (
                health["restarts"] >= len(working)
                and health["workers_alive"] == health["workers"]
                and health["spare_ready"]
                and health["fallback_spare_ready"]
                and not set(health["worker_pids"]) & set(solvers)
            )

        # replacements start at once; on a loaded machine their imports take seconds
        deadline = time.monotonic() + 60
        health = client.health()
        while not recovered(health) and time.monotonic() < deadline:
            time.sleep(0.2)
            health = client.health()
        assert recovered(health), health
        for path in sorted(CONTRACT.glob("consumer-*.json")):
            problem = json.loads(path.read_text())
            solution = client.assign_consumer(problem)
            assert_valid(problem, solution)
            assert not solution.stats.fallback
    text = httpx.get(f"{service.url}/metrics", timeout=10).text
    assert 'stickyd_worker_restarts_total{pool="solver",reason="died"}' in text
