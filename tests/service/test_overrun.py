"""The service's own overrun path (service/pool.py), not the solver's: a worker still busy past
the request's limit plus the service's response margin is abandoned and the separate fallback
process answers, saying so with the pool's reason."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from cli.child_service import ServiceProcess, running_service
from models import ConsumerSolution
from service.pool import FALLBACK_REASON
from tests.conftest import assert_valid

SMALLEST_MARGIN_MS = 30
"""STICKYD_RESPONSE_MARGIN_MS's lower bound: a worker gets 1 ms (the request's limit) plus 10 ms
(the margin less the reply reserve) to answer, so no machine is fast enough for the worker to
answer in time, whatever its solver does (the quick fill answers a spent budget in a few ms)."""


@pytest.fixture(scope="module")
def impatient_service() -> Iterator[ServiceProcess]:
    """A real `stickyd serve` whose response margin is the smallest the settings allow, and no
    per-size floor (which would give these 50,000-partition requests their reading time)."""
    env = {"STICKYD_WORKERS": "1", "STICKYD_RESPONSE_MARGIN_MS": str(SMALLEST_MARGIN_MS), "STICKYD_FLOOR_SCALE": "0"}
    with running_service(env) as running:
        yield running


def _claimed_problem(limit_ms: int) -> dict[str, Any]:
    """50,000 partitions and 200 members with claims (some stale, some on topics no longer read):
    receiving, parsing and indexing alone take a worker far longer than the 11 ms it is given."""
    return {
        "topics": {f"t{i}": 1000 for i in range(50)},
        "members": [
            {
                "id": f"m{i}",
                "topics": [f"t{j}" for j in range(50) if (i + j) % 4],
                "owned": {f"t{i % 50}": list(range(0, 1000, 3))},
                "generation": 1 + i % 2,
            }
            for i in range(200)
        ],
        "options": {"time_limit_ms": limit_ms},
    }


def _fallbacks(service: ServiceProcess) -> float:
    text = httpx.get(f"{service.url}/metrics", timeout=10).text
    return sum(float(v) for v in re.findall(r'^stickyd_fallbacks_total\{[^}]*"\} ([0-9.e+]+)$', text, re.M))


def test_a_worker_overrunning_the_service_deadline_is_answered_by_the_fallback_process(
    impatient_service: ServiceProcess,
) -> None:
    """The pool's own reason is in `warnings` (the solver's reasons come after it), the answer
    is the fallback's (the request's time is spent, so the quick valid fill), it is valid, and
    the service counts one fallback."""
    problem = _claimed_problem(limit_ms=1)
    before = _fallbacks(impatient_service)
    response = httpx.post(f"{impatient_service.url}/v1/assign/consumer", json=problem, timeout=60)
    assert response.status_code == 200
    solution = ConsumerSolution.model_validate(response.json())
    assert FALLBACK_REASON in solution.stats.warnings, solution.stats.warnings
    assert (solution.stats.fallback, solution.stats.optimal, solution.stats.solver) == (True, False, "quick-fill")
    assert any(w.endswith("quick valid fill") for w in solution.stats.warnings)
    assert_valid(problem, solution)
    assert _fallbacks(impatient_service) == before + 1
    assert 'reason="service-deadline"' in httpx.get(f"{impatient_service.url}/metrics", timeout=10).text


def test_a_time_limit_the_byte_scan_misreads_is_kept_from_the_parsed_request(
    impatient_service: ServiceProcess,
) -> None:
    """The web process guesses a request's limit from its bytes (the last `"time_limit_ms": N`)
    and the solver process reports the parsed one only when they differ: here a topic named
    `time_limit_ms` makes the guess 30 s while `options.time_limit_ms` is 1 ms, and the answer
    must still come from the fallback at the 1 ms limit plus the margin, not 30 s later."""
    problem = _claimed_problem(limit_ms=1)
    problem["topics"] = {**problem["topics"], "time_limit_ms": 30_000}
    problem = {"options": problem.pop("options"), **problem}  # the real limit first, the topic last
    started = time.monotonic()
    response = httpx.post(f"{impatient_service.url}/v1/assign/consumer", json=problem, timeout=60)
    elapsed = time.monotonic() - started
    assert response.status_code == 200
    solution = ConsumerSolution.model_validate(response.json())
    assert FALLBACK_REASON in solution.stats.warnings, solution.stats.warnings
    assert_valid(problem, solution)
    # the fallback reparses 80,000 partitions: seconds on a busy shared machine, never the 30 s guess
    assert elapsed < 15, elapsed
