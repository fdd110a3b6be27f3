"""The service's own overrun path (service/processes/pool.py), not the solver's: a worker still busy past
the request's limit plus the service's response margin is abandoned and the separate fallback
process answers, saying so with the pool's reason."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx

from stickyd.cli.child_service import ServiceProcess
from stickyd.models import ConsumerSolution
from stickyd.service.processes.pool import FALLBACK_REASON
from tests.conftest import assert_valid
from tests.service.conftest import claimed_problem


def _claimed_problem(limit_ms: int) -> dict[str, Any]:
    """50,000 partitions and 200 members with claims (some stale, some on topics no longer read):
    receiving, parsing and indexing alone take a worker far longer than the 11 ms it is given."""
    return claimed_problem(50, 200, limit_ms, stale_generations=True)


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
