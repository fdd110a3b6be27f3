"""Large bodies and answers pass between the web process and a solver process through the
process's shared memory file, not the pipe (service/processes/shared_area.py): the answer is the one the
solver process's job gives in-process, nothing stays held in the file after the job, a client that
goes away while its body is being written leaves the process usable, and the pipes are widened."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from stickyd.models import ConsumerSolution
from stickyd.service.processes.pool import SolverPool, Timing, Watch
from stickyd.service.processes.shared_area import SHARED_MIN_BYTES, read_area, widen_pipes, write_area
from stickyd.service.processes.solve_job import JobResult, Limits, run_job
from tests.conftest import assert_valid
from tests.service.conftest import claimed_problem

LIMITS = Limits(max_partitions=2_000_000, max_members=20_000, default_time_limit_ms=2000, max_time_limit_ms=30_000)
F_GETPIPE_SZ = 1032
BIG = claimed_problem(300, 340, 30_000)
"""300,000 partitions: a body of about 1.2 MB and an answer of about 1.2 MB, both over SHARED_MIN_BYTES."""
SMALL: dict[str, Any] = {
    "topics": {"t": 4},
    "members": [{"id": "a", "topics": ["t"]}],
    "options": {"time_limit_ms": 500},
}


def _run(pool: SolverPool, body: bytes) -> asyncio.Task[JobResult | None]:
    now = time.monotonic()
    return asyncio.ensure_future(
        pool.run(
            "consumer",
            body,
            LIMITS,
            arrived=now,
            watch=Watch(guard=now + 60, guard_after_deadline_s=30),
            timing=Timing(),
        )
    )


def _with_pool(scenario: Any) -> Any:
    async def run() -> Any:
        pool = SolverPool(1, 2**32)
        await pool.start()
        try:
            return await scenario(pool)
        finally:
            await pool.close()

    return asyncio.run(run())


def test_a_large_body_and_answer_pass_through_the_memory_file_and_leave_it_empty() -> None:
    body = json.dumps(BIG).encode()
    in_process = run_job("consumer", body, LIMITS)
    assert len(body) >= SHARED_MIN_BYTES and len(in_process.body) >= SHARED_MIN_BYTES

    async def scenario(pool: SolverPool) -> tuple[JobResult | None, int]:
        result = await _run(pool, body)
        (worker,) = pool._all  # noqa: SLF001 - the one process's memory file
        return result, os.fstat(worker.area.fileno()).st_size

    result, left_in_file = _with_pool(scenario)
    assert result is not None and result.status == 200
    answer = ConsumerSolution.model_validate_json(result.body)
    assert_valid(BIG, answer)
    expected = ConsumerSolution.model_validate_json(in_process.body)
    assert answer.assignment == expected.assignment
    assert left_in_file == 0


def test_a_client_gone_while_its_large_body_is_written_leaves_the_process_usable() -> None:
    """The request is cancelled during the write into the memory file: the process takes the
    next job (after the write is over) and answers it."""
    body = json.dumps(BIG).encode()

    async def scenario(pool: SolverPool) -> JobResult | None:
        first = _run(pool, body)
        await asyncio.sleep(0)  # the job has taken the process and started writing its body
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        return await _run(pool, json.dumps(SMALL).encode())

    result = _with_pool(scenario)
    assert result is not None and result.status == 200
    assert_valid(SMALL, ConsumerSolution.model_validate_json(result.body))


def test_the_memory_file_round_trip_keeps_every_byte() -> None:
    data = os.urandom(3 * SHARED_MIN_BYTES + 7)
    area = os.memfd_create("test-area")
    try:
        marker = write_area(area, data)
        assert marker.length == len(data)
        assert read_area(area, marker.length) == data
    finally:
        os.close(area)


def test_pipes_are_widened_to_hold_a_megabyte_frame() -> None:
    read_end, write_end = os.pipe()
    try:
        widen_pipes(read_end, write_end)
        wanted = min(1 << 20, int(Path("/proc/sys/fs/pipe-max-size").read_text()))
        assert fcntl.fcntl(write_end, F_GETPIPE_SZ) >= wanted
    finally:
        os.close(read_end)
        os.close(write_end)
