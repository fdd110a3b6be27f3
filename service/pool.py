"""Solver processes: CPU-bound solves run here, never on the event loop.

A worker that dies breaks a ProcessPoolExecutor; the pool is then replaced and the request
tried once more. A solve that overruns its request's time limit is abandoned (the worker
finishes it and moves on) and the request gets the fallback heuristic's answer, computed in a
separate process so that it does not queue behind busy workers.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing as mp
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from service.jobs import JobResult, Kind, Limits, run_job, warm_up

log = logging.getLogger(__name__)

WORKER_NICENESS = 5
FALLBACK_REASON = "answered by the KIP-54 fallback: the service's time limit for this request ran out"


class SolverPool:
    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._lock = threading.Lock()
        self._executor = self._start()
        # its own process: a fallback solve neither queues behind busy workers nor holds the
        # web process's GIL
        self._fallback = self._start(1)
        self.restarts = 0
        self.ready = False

    def _start(self, workers: int | None = None) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=workers or self.workers, mp_context=mp.get_context("spawn"), initializer=_lower_priority
        )

    async def warm(self) -> None:
        loop = asyncio.get_running_loop()
        await asyncio.gather(
            *(loop.run_in_executor(self._executor, warm_up) for _ in range(self.workers)),
            loop.run_in_executor(self._fallback, warm_up),
        )
        self.ready = True

    async def solve(self, kind: Kind, body: bytes, limits: Limits, deadline_s: float) -> JobResult:
        """The worker's answer, or the fallback's when the worker overruns `deadline_s`."""
        loop = asyncio.get_running_loop()
        for attempt in (1, 2):
            executor = self._executor
            try:
                future = loop.run_in_executor(executor, run_job, kind, body, limits)
                return await asyncio.wait_for(asyncio.shield(future), timeout=deadline_s)
            except TimeoutError:
                log.warning("solve overran %.0f ms; answering with the fallback", deadline_s * 1000)
                return await self._run_fallback(kind, body, limits)
            except BrokenProcessPool:
                self._replace(executor)
                if attempt == 2:
                    raise
        raise RuntimeError("unreachable")

    async def _run_fallback(self, kind: Kind, body: bytes, limits: Limits) -> JobResult:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._fallback, run_job, kind, body, limits, FALLBACK_REASON)
        except BrokenProcessPool:
            log.error("the fallback process died; starting a new one")
            self._fallback = self._start(1)
            self.restarts += 1
            return await loop.run_in_executor(self._fallback, run_job, kind, body, limits, FALLBACK_REASON)

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._executor is broken:
                log.error("a solver process died; starting a new pool")
                self._executor = self._start()
                self.restarts += 1
        broken.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        self._fallback.shutdown(wait=False, cancel_futures=True)


def _lower_priority() -> None:
    """Solver processes yield the CPU to the web process, so health and metrics stay fast."""
    try:
        os.nice(WORKER_NICENESS)
    except OSError:
        log.warning("could not lower the solver processes' priority")
