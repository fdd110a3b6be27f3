"""No second parse and no waiting behind others (service/processes/pool.py, service/http/answering.py):

- a solver process still running past its guard is given the patience to answer with its own
  quick fill (it asks the spent budget in every stage) before its job is stopped and handed to
  the fallback pool, which would parse the body again;
- a request that no solver process can take by the last moment it could still start and answer
  in time is not queued behind the others: the fallback pool answers it when it has a process
  free, else it gets 503 with Retry-After at once.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import threading
import time
from typing import Any

import httpx
import pytest

from stickyd.cli.child_service import ServiceProcess
from stickyd.models import ConsumerSolution
from stickyd.service.http.answering import REPLY_RESERVE_S, REPLY_S_PER_MB, reply_reserve_s
from stickyd.service.processes.pool import QUEUE_REASON, SolverPool, Timing, Watch
from stickyd.service.processes.solve_job import Limits
from tests.conftest import assert_valid
from tests.service.conftest import claimed_problem

LIMITS = Limits(max_partitions=2_000_000, max_members=20_000, default_time_limit_ms=2000, max_time_limit_ms=30_000)
SMALL: dict[str, Any] = {"topics": {"t": 4}, "members": [{"id": "a", "topics": ["t"]}], "options": {"time_limit_ms": 1}}
PAST_S = 1.0
"""a job past its guard arrived this long ago: the deadline its process reports (arrival plus 1 ms),
to which the guard moves, has passed too."""


async def _run_held(pool: SolverPool, watch: Watch, timing: Timing, hold: bool) -> Any:
    """`SMALL` on the pool's one process. Held (SIGSTOP until run() returns), the process cannot
    answer before the guard's timer fires, however the host schedules the two: without it a small
    job's answer can be read in the same turn of the loop as the timer and be taken."""
    pids = pool.pids if hold else []
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        now = time.monotonic()
        return await pool.run(
            "consumer", json.dumps(SMALL).encode(), LIMITS, arrived=now - PAST_S, watch=watch, timing=timing
        )
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


def _run_past_its_guard(patience_s: float) -> tuple[Any, Timing]:
    """One small job on a real one-process pool whose guard has passed before the job is sent;
    without patience, its process is held until the pool has given the job up."""

    async def run() -> tuple[Any, Timing]:
        pool = SolverPool(1, 2**32)
        await pool.start()
        try:
            timing = Timing()
            watch = Watch(guard=time.monotonic(), guard_after_deadline_s=0.0, patience_s=patience_s)
            return await _run_held(pool, watch, timing, hold=patience_s == 0), timing
        finally:
            await pool.close()

    return asyncio.run(run())


def test_a_process_past_its_guard_answers_itself_within_the_patience() -> None:
    """The guard has passed before the job starts, but the process is alive and working: its own
    answer (with a spent budget: what its stages give in no time) is taken, nothing is stopped or
    handed over."""
    result, timing = _run_past_its_guard(patience_s=60.0)
    assert result is not None and result.status == 200
    assert (timing.started, timing.overrun) == (True, False)
    assert_valid(SMALL, ConsumerSolution.model_validate_json(result.body))


def test_without_patience_a_job_past_its_guard_is_stopped_for_the_fallback() -> None:
    """Patience 0 (STICKYD_FLOOR_SCALE=0, or a body too small for parsing again to matter): the
    job is stopped at the guard and the caller hands the request to the fallback pool."""
    result, timing = _run_past_its_guard(patience_s=0.0)
    assert result is None
    assert (timing.started, timing.overrun) == (True, True)


def test_an_overrun_job_is_stopped_in_the_background_and_its_process_comes_back() -> None:
    """The caller of a job past its guard gets None at once, with the job's stop still under way
    (not after waiting up to INTERRUPT_WAIT_S for it); once stopped, the process is idle again."""

    async def run() -> tuple[Any, int, int]:
        pool = SolverPool(1, 2**32)
        await pool.start()
        try:
            watch = Watch(guard=time.monotonic(), guard_after_deadline_s=0.0)
            result = await _run_held(pool, watch, Timing(), hold=True)
            stopping = len(pool._stopping)  # noqa: SLF001 - the stop under way when run() returned
            await asyncio.gather(*pool._stopping)  # noqa: SLF001
            return result, stopping, pool.idle
        finally:
            await pool.close()

    result, stopping, idle = asyncio.run(run())
    assert result is None
    assert stopping == 1
    assert idle == 1


def test_the_reply_reserve_grows_with_the_body() -> None:
    """The response margin keeps time for writing the answer, more for a large body (whose answer
    is of its size): 20 ms for a small one, about 56 ms for a 12 MB body of 1M partitions."""
    assert reply_reserve_s(b"{}") == pytest.approx(REPLY_RESERVE_S, abs=1e-6)
    assert reply_reserve_s(b" " * 12_000_000) == pytest.approx(REPLY_RESERVE_S + 12 * REPLY_S_PER_MB)
    assert reply_reserve_s({"topics": {}}) == REPLY_RESERVE_S  # a parsed request: no answer size known


def test_a_process_past_its_memory_cap_takes_no_further_job() -> None:
    """A pool whose memory cap every process is over after any job (1 byte): each process says so
    before its answer and exits; the jobs sent right behind it go to the warm spare or a new
    process, never to the exiting one (which would be a ProcessLookupError: a 503), and each
    replacement is counted as recycled."""

    async def run() -> tuple[list[int], list[str]]:
        pool = SolverPool(1, 1)
        reasons: list[str] = []
        pool.on_restart = reasons.append
        await pool.start()
        try:
            statuses = []
            for _ in range(3):
                now = time.monotonic()
                result = await pool.run(
                    "consumer",
                    json.dumps({**SMALL, "options": {"time_limit_ms": 5000}}).encode(),
                    LIMITS,
                    arrived=now,
                    watch=Watch(guard=now + 60, guard_after_deadline_s=55),
                    timing=Timing(),
                )
                assert result is not None
                statuses.append(result.status)
            return statuses, reasons
        finally:
            await pool.close()

    statuses, reasons = asyncio.run(run())
    assert statuses == [200, 200, 200]
    assert len(reasons) >= 2 and set(reasons) == {"recycled past its memory cap"}, reasons


def _post(url: str, problem: dict[str, Any] | bytes) -> httpx.Response:
    body = problem if isinstance(problem, bytes) else json.dumps(problem).encode()
    headers = {"content-type": "application/json"}
    return httpx.post(f"{url}/v1/assign/consumer", content=body, headers=headers, timeout=120)


def _in_background(url: str, problem: dict[str, Any]) -> tuple[threading.Thread, list[httpx.Response]]:
    answers: list[httpx.Response] = []
    thread = threading.Thread(target=lambda: answers.append(_post(url, problem)), daemon=True)
    thread.start()
    return thread, answers


def _counted(url: str, reason: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    pattern = rf'^stickyd_cancellations_total\{{[^}}]*reason="{reason}"\}} ([0-9.e+]+)$'
    return sum(float(v) for v in re.findall(pattern, text, re.M))


def _wait_for_count(url: str, reason: str, count: float, within_s: float = 60.0) -> None:
    until = time.monotonic() + within_s
    while _counted(url, reason) < count:
        assert time.monotonic() < until, f"no {reason} cancellation counted"
        time.sleep(0.005)


def _wait_busy(url: str, within_s: float = 30.0) -> None:
    """Until the solver process has taken the job (the service's own health says so)."""
    until = time.monotonic() + within_s
    while httpx.get(f"{url}/v1/health", timeout=10).json()["workers_idle"] != 0:
        assert time.monotonic() < until, "the solver process never took the busy job"
        time.sleep(0.01)


def test_a_request_no_solver_process_can_take_in_time_gets_the_fallback_or_a_503_at_once(
    impatient_service: ServiceProcess,
) -> None:
    """With the one solver process busy (the KIP-54 heuristic on 400k partitions, 20 s limit), a
    request with a small limit is not queued behind it: the fallback pool answers it (valid, the
    pool's queue reason in `warnings`); while the fallback process is busy with such a request
    too, the next gets 503 with a Retry-After of at least 1 s, and no answer waits for the busy
    solve."""
    url = impatient_service.url
    busy, busy_answer = _in_background(url, claimed_problem(400, 400, 20_000, strategy="sticky"))
    _wait_busy(url)
    queued_before = _counted(url, "queue")
    response = _post(url, SMALL)
    assert response.status_code == 200, response.text
    solution = ConsumerSolution.model_validate(response.json())
    assert QUEUE_REASON in solution.stats.warnings, solution.stats.warnings
    assert solution.stats.fallback
    assert_valid(SMALL, solution)
    # the fallback process busy with a 400k-partition request (parsing it alone takes it a while)
    big = claimed_problem(400, 400, 1, strategy="sticky")
    occupant, occupant_answer = _in_background(url, big)
    _wait_for_count(url, "queue", queued_before + 2)
    refused = _post(url, SMALL)
    assert refused.status_code == 503, refused.text
    assert int(refused.headers["retry-after"]) >= 1
    assert "busy" in refused.json()["detail"]
    occupant.join(120)
    busy.join(120)
    assert [r.status_code for r in occupant_answer + busy_answer] == [200, 200]
