"""STICKYD_WORKER_PREFAULT_MB: a fresh solver process touches that much heap before it says it is
ready, so its first large job does not page-fault it in; the heap keeps it, the answers are
unchanged, it is clamped to half of STICKYD_WORKER_MEMORY_MB, and it is off by default."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from stickyd.service.app_state import Services
from stickyd.service.processes.pool import SolverPool, Timing, Watch
from stickyd.service.processes.solve_job import JobResult, Limits, run_job
from stickyd.service.settings import Settings
from tests.service.conftest import claimed_problem

LIMITS = Limits(max_partitions=2_000_000, max_members=20_000, default_time_limit_ms=2000, max_time_limit_ms=30_000)
MIB = 1024 * 1024
# no member claims anything: the incremental path (tried when members own partitions) gives up
# after a share of time, so a process whose first job runs slower can answer through the full flow
# instead, with an equally optimal but different answer; without claims the flow alone answers
PROBLEM = claimed_problem(20, 30, 2_000)
BODY = json.dumps({**PROBLEM, "members": [{**m, "owned": {}} for m in PROBLEM["members"]]}).encode()


def _rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _rss_and_answer(prefault_bytes: int) -> tuple[int, JobResult | None]:
    async def run() -> tuple[int, JobResult | None]:
        pool = SolverPool(1, 2**32, prefault_bytes=prefault_bytes)
        await pool.start()
        try:
            now = time.monotonic()
            answer = await pool.run(
                "consumer",
                BODY,
                LIMITS,
                arrived=now,
                watch=Watch(guard=now + 60, guard_after_deadline_s=30),
                timing=Timing(),
            )
            return _rss_bytes(pool.pids[0]), answer
        finally:
            await pool.close()

    return asyncio.run(run())


def _solution(result: JobResult | None) -> dict[str, object]:
    assert result is not None and result.status == 200
    answer = json.loads(result.body)
    answer["stats"].pop("time_ms")
    return answer


def test_a_prefaulted_solver_process_keeps_the_touched_heap_and_answers_the_same() -> None:
    plain_rss, plain = _rss_and_answer(0)
    touched_rss, touched = _rss_and_answer(256 * MIB)
    assert touched_rss - plain_rss >= 200 * MIB, (plain_rss, touched_rss)
    assert _solution(touched) == _solution(plain) == _solution(run_job("consumer", BODY, LIMITS))


def test_the_prefault_is_off_by_default_and_at_most_half_the_memory_cap() -> None:
    default = Services(Settings())
    assert default.solvers.prefault_bytes == default.fallback.prefault_bytes == 0
    clamped = Services(Settings(worker_memory_mb=512, worker_prefault_mb=1000))
    assert clamped.solvers.prefault_bytes == clamped.fallback.prefault_bytes == 256 * MIB
    chosen = Services(Settings(worker_memory_mb=4096, worker_prefault_mb=768))
    assert chosen.solvers.prefault_bytes == 768 * MIB
