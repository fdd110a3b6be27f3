"""service/processes/idle_processes.py: requests waiting for a solver process are served first come, first served."""

from __future__ import annotations

import asyncio
import time

from stickyd.service.processes.idle_processes import IdleProcesses

LATER = 60.0


def test_a_freed_process_goes_to_the_longest_waiting_request_not_to_a_newcomer() -> None:
    """asyncio.Queue lets a request that arrives just as a process is freed take it, and the woken
    waiter goes to the back of the line: the unfairness that made the small requests' p99."""

    async def run() -> list[tuple[str, str]]:
        idle: IdleProcesses[str] = IdleProcesses()
        served: list[tuple[str, str]] = []

        async def request(name: str) -> None:
            process = await idle.take(until=time.monotonic() + LATER)
            assert process is not None
            served.append((name, process))

        first = asyncio.create_task(request("first"))
        second = asyncio.create_task(request("second"))
        await asyncio.sleep(0)  # both wait in line
        idle.put("p1")
        newcomer = asyncio.create_task(request("newcomer"))  # arrives before the first wakes up
        await asyncio.sleep(0)
        idle.put("p2")
        idle.put("p3")
        await asyncio.gather(first, second, newcomer)
        return served

    assert asyncio.run(run()) == [("first", "p1"), ("second", "p2"), ("newcomer", "p3")]


def test_an_idle_process_is_taken_at_once_and_counted() -> None:
    async def run() -> tuple[int, str | None, int]:
        idle: IdleProcesses[str] = IdleProcesses()
        idle.put("p1")
        before = len(idle)
        taken = await idle.take(until=time.monotonic())  # start-by already passed: an idle one still serves
        return before, taken, len(idle)

    assert asyncio.run(run()) == (1, "p1", 0)


def test_a_request_still_waiting_at_its_start_by_gets_none_and_leaves_the_line() -> None:
    async def run() -> tuple[str | None, str | None, int]:
        idle: IdleProcesses[str] = IdleProcesses()
        late = await idle.take(until=time.monotonic() + 0.02)
        passed = await idle.take(until=time.monotonic() - 1)
        idle.put("p1")  # nobody waits any more: it stays idle
        return late, passed, len(idle)

    assert asyncio.run(run()) == (None, None, 1)


def test_a_request_cancelled_just_after_being_handed_a_process_passes_it_to_the_next_in_line() -> None:
    async def run() -> tuple[str | None, int]:
        idle: IdleProcesses[str] = IdleProcesses()
        gone = asyncio.create_task(idle.take(until=time.monotonic() + LATER))
        next_in_line = asyncio.create_task(idle.take(until=time.monotonic() + LATER))
        await asyncio.sleep(0)
        idle.put("p1")  # handed to `gone`, which is cancelled before it runs again
        gone.cancel()
        got = await next_in_line
        return got, len(idle)

    assert asyncio.run(run()) == ("p1", 0)


def test_a_request_cancelled_while_waiting_leaves_the_line() -> None:
    async def run() -> int:
        idle: IdleProcesses[str] = IdleProcesses()
        waiting = asyncio.create_task(idle.take(until=time.monotonic() + LATER))
        await asyncio.sleep(0)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        idle.put("p1")  # goes idle, not to the request that left
        return len(idle)

    assert asyncio.run(run()) == 1
