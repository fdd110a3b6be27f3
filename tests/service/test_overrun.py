"""The service's own overrun path (service/pool.py), not the solver's: a worker still busy past
the request's limit plus the service's grace is abandoned and the separate fallback process
answers, saying so with the pool's reason."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx

from cli.child_service import ServiceProcess
from models import ConsumerSolution
from service.pool import FALLBACK_REASON
from tests.conftest import assert_valid


def _slow_to_parse(limit_ms: int) -> dict[str, Any]:
    """100,000 partitions and 400 members with claims: parsing and indexing alone take a worker
    several times the service's grace (about 0.7 s against 0.1 s), whatever the solver does."""
    return {
        "topics": {f"t{i}": 1000 for i in range(100)},
        "members": [
            {
                "id": f"m{i}",
                "topics": [f"t{j}" for j in range(100) if (i + j) % 4],
                "owned": {f"t{i % 100}": list(range(0, 1000, 3))},
                "generation": 1,
            }
            for i in range(400)
        ],
        "options": {"time_limit_ms": limit_ms},
    }


def _fallbacks(service: ServiceProcess) -> float:
    text = httpx.get(f"{service.url}/metrics", timeout=10).text
    return sum(float(v) for v in re.findall(r'^stickyd_fallbacks_total\{[^}]*"\} ([0-9.e+]+)$', text, re.M))


def test_a_worker_overrunning_the_service_deadline_is_answered_by_the_fallback_process(
    service: ServiceProcess,
) -> None:
    problem = _slow_to_parse(limit_ms=1)
    before = _fallbacks(service)
    response = httpx.post(f"{service.url}/v1/assign/consumer", json=problem, timeout=60)
    assert response.status_code == 200
    solution = ConsumerSolution.model_validate(response.json())
    # the pool's reason, not the solver's own "fell back to the KIP-54 heuristic: ..."
    assert FALLBACK_REASON in solution.stats.warnings, solution.stats.warnings
    assert (solution.stats.fallback, solution.stats.optimal, solution.stats.solver) == (True, False, "kip54-sticky")
    assert_valid(problem, solution)
    assert _fallbacks(service) == before + 1


def test_a_time_limit_the_byte_scan_misreads_is_kept_from_the_parsed_request(service: ServiceProcess) -> None:
    """The web process guesses a request's limit from its bytes (the last `"time_limit_ms": N`)
    and the solver process reports the parsed one only when they differ: here a topic named
    `time_limit_ms` makes the guess 30 s while `options.time_limit_ms` is 1 ms, and the answer
    must still come from the fallback at the 1 ms limit plus the margin, not 30 s later."""
    problem = _slow_to_parse(limit_ms=1)
    problem["topics"] = {**problem["topics"], "time_limit_ms": 30_000}
    problem = {"options": problem.pop("options"), **problem}  # the real limit first, the topic last
    started = time.monotonic()
    response = httpx.post(f"{service.url}/v1/assign/consumer", json=problem, timeout=60)
    elapsed = time.monotonic() - started
    assert response.status_code == 200
    solution = ConsumerSolution.model_validate(response.json())
    assert FALLBACK_REASON in solution.stats.warnings, solution.stats.warnings
    assert_valid(problem, solution)
    # the fallback reparses 130,000 partitions: seconds on a busy shared machine, never the 30 s guess
    assert elapsed < 15, elapsed
