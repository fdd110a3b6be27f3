"""The idle processes of a pool and the requests waiting for one, first come, first served.

A process that becomes free goes straight to the request that has waited longest; a request that
arrives while others wait queues behind them. (asyncio.Queue does not promise that: a woken
getter that finds the queue emptied by a newcomer goes to the back of the line again, so under a
steady stream of small requests a few of them waited many times the others and made the tail of
the latency.) A wait is bounded by a moment (the request's start-by) with one timer, not a task.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from typing import Generic, TypeVar

Process = TypeVar("Process")


class IdleProcesses(Generic[Process]):
    def __init__(self) -> None:
        self._idle: deque[Process] = deque()
        self._waiting: deque[asyncio.Future[Process | None]] = deque()

    def __len__(self) -> int:
        """Processes free right now (never while a request waits: a freed one goes to it)."""
        return len(self._idle)

    def put(self, process: Process) -> None:
        """`process` is free: the longest-waiting request gets it, else it waits idle."""
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(process)
                return
        self._idle.append(process)

    async def take(self, until: float) -> Process | None:
        """An idle process, waiting in line for one until `until` (time.monotonic()); None when
        none came by then. A caller cancelled while waiting gives back the process it was handed."""
        if self._idle:
            return self._idle.popleft()
        wait_s = until - time.monotonic()
        if wait_s <= 0:
            return None
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[Process | None] = loop.create_future()
        self._waiting.append(waiter)
        timer = loop.call_later(wait_s, _expire, waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and (handed := waiter.result()) is not None:
                self.put(handed)  # handed over just as the caller went away: the next in line gets it
            raise
        finally:
            timer.cancel()
            if waiter.cancelled() or waiter.result() is None:  # not handed a process: off the line
                self._forget(waiter)

    def _forget(self, waiter: asyncio.Future[Process | None]) -> None:
        with contextlib.suppress(ValueError):  # put() took it off the line already
            self._waiting.remove(waiter)


def _expire(waiter: asyncio.Future[Process | None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
