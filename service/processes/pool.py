"""Solver processes: CPU-bound solves run here, never on the event loop.

Each solver process (service/processes/solver_process.py; the web process's handle on it is
service/processes/solver_handle.py) is forked by the fork server (service/processes/fork_server.py),
and dies with the web process whatever kills that. A request waits for an idle process, counted in its
time, but only until the last moment it can still start and answer in time (its deadline less
what the cheapest answer to a body of its size costs): a request that cannot start by then is not
queued behind the others (the caller answers it otherwise). Its deadline counts from its arrival
(the process reports it once the body is parsed). A job the client abandoned is interrupted
(SIGUSR1) and, when it does not stop at once, its process is killed and replaced. A job still
running at its deadline plus the guard is given `patience_s` more (its process asks the spent
budget in every stage and answers with its quick fill: cheaper than parsing the body again
elsewhere); a job past that too is stuck, is stopped the same way (in the background: the caller
does not wait up to INTERRUPT_WAIT_S for it), and the caller hands the request to the fallback pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from stickyd.service.processes.fork_server import ForkServer
from stickyd.service.processes.idle_processes import IdleProcesses
from stickyd.service.processes.job import JobResult, Kind, Limits, error
from stickyd.service.processes.pipe_frames import encode_frame
from stickyd.service.processes.shared_area import SHARED_MIN_BYTES, Shared
from stickyd.service.processes.solver_handle import ProcessAnswer, SolverProcess, exit_or_kill, start_solver_process
from stickyd.service.watch.rates import LiveRates
from stickyd.solvers.time_policy import CLOSE_WAIT_S, HAND_OFF_POLL_S, INTERRUPT_WAIT_S

log = logging.getLogger(__name__)

FALLBACK_REASON = "answered by the fallback pool: the service's time limit for this request ran out"
EXITED_REASON = "answered by the fallback pool: the solver process exited during the solve"
QUEUE_REASON = "answered by the fallback pool: every solver process was busy past the moment this request had to start"
RECYCLED = "recycled past its memory cap"


@dataclass
class Timing:
    """What one answer cost, for the metrics."""

    queue_wait_s: float = 0.0
    deadline: float | None = None
    """the request's deadline (monotonic), once a solver process has read its time limit."""
    cancelled: bool = False
    overrun: bool = False
    """past the deadline plus the guard and the patience: the job was stopped."""
    started: bool = False
    """a solver process took the job (False: no process was free by the request's start-by)."""
    retry_after_s: int = 0
    """set with a 503 for a request no process could take in time: when to try again."""


@dataclass(frozen=True, kw_only=True)
class Watch:
    """When the pool gives a job up (instants are monotonic)."""

    guard: float
    """a job still running at this instant is given up; the instant moves to the deadline its
    process reports plus `guard_after_deadline_s`."""
    guard_after_deadline_s: float
    start_by: float | None = None
    """a job with no process free by then is not started (default: `guard`)."""
    patience_s: float = 0.0
    """past the guard, how long the job may still answer itself (its process answers a spent
    budget with its quick fill)."""
    hand_off_ready: Callable[[], bool] = lambda: True
    """past the patience, the job is given up only once this says the fallback pool has a process
    free (handing it to a busy one would only queue it behind another) ..."""
    hand_off_limit_s: float = 0.0
    """... or this much later still."""


class _Guarded:
    """A job sent to its process: the future of its answer, and the timer that ends the wait for
    it at the guard (moved when the process reports the request's real deadline)."""

    def __init__(self, job: int, watch: Watch, timing: Timing, running: dict[int, float]) -> None:
        self.job = job
        self.loop = asyncio.get_running_loop()
        self.answer: asyncio.Future[ProcessAnswer] = self.loop.create_future()
        self.settled: asyncio.Future[None] = self.loop.create_future()  # by the answer or the guard's timer
        self.after_deadline_s = watch.guard_after_deadline_s
        self.expected_deadline = watch.guard - watch.guard_after_deadline_s
        self.timing = timing
        self.running = running
        timing.deadline = self.expected_deadline
        running[job] = self.expected_deadline
        self.timer = self.loop.call_later(max(0.0, watch.guard - time.monotonic()), self.settle)
        self.answer.add_done_callback(self.settle)

    def settle(self, done: asyncio.Future[ProcessAnswer] | None = None) -> None:
        if done is not None and not done.cancelled():
            done.exception()  # retrieved: a process that dies after its job was given up is no error
        if not self.settled.done():
            self.settled.set_result(None)

    def told(self, deadline: float) -> None:
        """The process read a time limit other than the byte scan's: the guard moves."""
        self.timing.deadline = deadline
        self.running[self.job] = deadline
        self.timer.cancel()
        self.timer = self.loop.call_later(max(0.0, deadline + self.after_deadline_s - time.monotonic()), self.settle)


async def _patience(answer: asyncio.Future[ProcessAnswer], watch: Watch) -> None:
    """Past the guard, the job's process answers a spent budget with its quick fill, which costs
    less than parsing the body again in the fallback pool: it is stuck only past the patience, and
    handed over only once the fallback pool can take it (or `hand_off_limit_s` later still)."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(answer), timeout=watch.patience_s)
    give_up = time.monotonic() + watch.hand_off_limit_s
    while not answer.done() and not watch.hand_off_ready() and time.monotonic() < give_up:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(answer), timeout=HAND_OFF_POLL_S)


class SolverPool:
    """`size` solver processes, a queue of the idle ones, and one warm spare: a process killed
    or dead is replaced at once by the spare (started and warmed up beforehand), and a new spare
    starts in the background, so the next request does not wait for a process to start."""

    def __init__(
        self,
        size: int,
        memory_cap_bytes: int,
        name: str = "solver",
        prefault_bytes: int = 0,
        forks: ForkServer | None = None,
    ) -> None:
        """`forks`: the fork server the pool shares with others (None: its own, stopped with it)."""
        self.size = size
        self._forks = forks or ForkServer()
        self._owns_forks = forks is None
        self.name = name
        self.memory_cap_bytes = memory_cap_bytes
        self.prefault_bytes = prefault_bytes
        self.restarts = 0
        self.ready = False
        self._idle: IdleProcesses[SolverProcess] = IdleProcesses()
        self._all: set[SolverProcess] = set()
        self._ids = itertools.count(1)
        self._closing = False
        self._starting: set[asyncio.Task[None]] = set()
        self._stopping: set[asyncio.Future[None]] = set()
        """overrun jobs being stopped (interrupted, or their process killed)."""
        self._spare: SolverProcess | None = None
        self._running: dict[int, float] = {}
        """job -> its deadline (monotonic), for the jobs on a process now."""
        self.promotions = 0
        """times the warm spare took a replaced process's place."""
        self.on_restart: Callable[[str], None] = lambda _reason: None
        """told the reason each time a process is replaced (the metrics count it)."""

    @property
    def alive(self) -> int:
        """Processes started and not known dead (replacements still starting are not counted)."""
        return sum(1 for worker in self._all if worker.alive)

    @property
    def spare_ready(self) -> bool:
        return self._spare is not None and self._spare.alive

    @property
    def pids(self) -> list[int]:
        """The working processes' ids (not the spare's)."""
        return sorted(worker.process.pid for worker in self._all if worker.alive)

    async def start(self) -> None:
        *workers, spare = await asyncio.gather(*(self._spawn() for _ in range(self.size + 1)))
        for worker in workers:
            self._all.add(worker)
            self._idle.put(worker)
        self._spare = spare
        self.ready = True

    @property
    def idle(self) -> int:
        """Processes free right now."""
        return len(self._idle)

    def busy_until(self) -> float:
        """The earliest deadline (monotonic) among the jobs running now: by then plus the guard a
        process is free (now when one is idle)."""
        if self._idle:
            return time.monotonic()
        return min(self._running.values(), default=time.monotonic())

    async def run(
        self,
        kind: Kind,
        body: bytes | dict[str, Any],
        limits: Limits,
        *,
        arrived: float,
        watch: Watch,
        fallback_reason: str | None = None,
        timing: Timing,
        live: LiveRates | None = None,
    ) -> JobResult | None:
        """The job's answer, or None when no process was free by `watch.start_by` (then
        timing.started is False) or the job was still running past its guard and its patience
        (Watch). Cancelling the caller (the client went away) stops the job. `live`: the watched
        cluster's rates, sent along for a request that asks for `partition_weights: "live"`."""
        worker = await self._take_idle(watch.guard if watch.start_by is None else watch.start_by, timing)
        if worker is None:
            return None
        timing.started = True
        sent = await self._put_body(worker, body)
        guarded = _Guarded(next(self._ids), watch, timing, self._running)
        worker.waiting[guarded.job] = guarded.answer
        worker.deadlines[guarded.job] = guarded.told
        assert worker.process.stdin is not None
        worker.process.stdin.write(
            encode_frame(
                ("job", guarded.job, kind, sent, limits, arrived, fallback_reason, guarded.expected_deadline, live)
            )
        )
        try:
            return await self._answer_or_give_up(worker, guarded, watch, timing)
        except asyncio.CancelledError:
            guarded.timer.cancel()
            timing.cancelled = True
            await asyncio.shield(self._stop(worker, guarded.job, guarded.answer))
            raise
        except ProcessLookupError:
            guarded.timer.cancel()
            self._replace(worker, "died")
            raise
        finally:
            self._running.pop(guarded.job, None)

    async def _take_idle(self, start_by: float, timing: Timing) -> SolverProcess | None:
        """An idle live process, first come, first served; None when none is free by `start_by`.
        A dead one found idle is replaced, and the wait starts again."""
        while True:
            queued = time.monotonic()
            worker = await self._idle.take(until=start_by)
            timing.queue_wait_s = time.monotonic() - queued
            if worker is None or worker.alive:
                return worker
            self._replace(worker, RECYCLED if worker.retiring else "died")

    async def _put_body(self, worker: SolverProcess, body: bytes | dict[str, Any]) -> bytes | dict[str, Any] | Shared:
        """A large body goes through the process's memory file; any other rides in the job's frame."""
        if not isinstance(body, bytes) or len(body) < SHARED_MIN_BYTES:
            return body
        writing = asyncio.ensure_future(worker.send_body(body))
        try:
            return await asyncio.shield(writing)
        except asyncio.CancelledError:  # the client went away: the process is free once written
            writing.add_done_callback(lambda done: self._job_over(worker, done))
            raise
        except OSError:
            log.exception("writing a body into a solver process's memory file failed")
            self._job_over(worker)
            raise ProcessLookupError("the solver process's memory file failed") from None

    async def _answer_or_give_up(
        self, worker: SolverProcess, guarded: _Guarded, watch: Watch, timing: Timing
    ) -> JobResult | None:
        """The answer if it comes by the guard (or within the patience after it); else the job is
        stopped in the background and None tells the caller to answer otherwise."""
        answer = guarded.answer
        await guarded.settled
        if not answer.done() and watch.patience_s > 0:
            await _patience(answer, watch)
        if answer.done():
            guarded.timer.cancel()
            result, _ms = answer.result()  # its process is free again already (_freed)
            return result
        timing.overrun = True  # past the guard and the patience
        # stopped in the background: the caller's fallback need not wait for it to stop
        stopping = asyncio.ensure_future(self._stop(worker, guarded.job, answer))
        self._stopping.add(stopping)
        stopping.add_done_callback(self._stopping.discard)
        return None

    def _job_over(self, worker: SolverProcess, writing: asyncio.Future[Shared] | None = None) -> None:
        """A job that never reached its process (its body's write, if any, is over): the process
        is free again."""
        if writing is not None and not writing.cancelled():
            writing.exception()  # retrieved: the caller is gone, nobody else would
        worker.release_area()
        if worker.alive:
            self._idle.put(worker)
        else:
            self._replace(worker, RECYCLED if worker.retiring else "died")

    async def _stop(self, worker: SolverProcess, job: int, answer: asyncio.Future[ProcessAnswer]) -> None:
        """Interrupt the job; kill and replace the process if it does not stop at once. A job
        that answered meanwhile is over: its process is free again already (_freed) and may be
        on the next request's job, which must not be touched."""
        if answer.done():
            return
        worker.interrupt(job)
        with contextlib.suppress(TimeoutError, ProcessLookupError):
            await asyncio.wait_for(asyncio.shield(answer), timeout=INTERRUPT_WAIT_S)
        if answer.done() and not answer.cancelled() and answer.exception() is None:
            return
        worker.kill()
        self._replace(worker, "killed: its job did not stop when interrupted")

    def _replace(self, worker: SolverProcess, reason: str) -> None:
        """Forget `worker` (killing it); the warm spare takes its place at once, and a new process
        starts in the background (the next spare, or the worker itself when no spare was ready)."""
        if worker is self._spare:  # the spare itself died: start another
            self._spare = None
            self._start_in_background()
            return
        if worker not in self._all:
            return
        self._all.discard(worker)
        worker.kill()
        if self._closing:
            return
        self.restarts += 1
        self.on_restart(reason)
        spare, self._spare = self._spare, None
        if spare is not None and spare.alive:
            self._all.add(spare)
            self._idle.put(spare)
            self.promotions += 1
            log.warning(
                "%s process %s %s; the warm spare %s takes its place, a new spare is starting",
                self.name,
                worker.process.pid,
                reason,
                spare.process.pid,
            )
        else:
            log.warning("%s process %s %s; starting a new one", self.name, worker.process.pid, reason)
        self._start_in_background()

    def _start_in_background(self) -> None:
        if self._closing:
            return
        task = asyncio.create_task(self._start_one())
        self._starting.add(task)
        task.add_done_callback(self._starting.discard)

    def _spawn(self) -> Awaitable[SolverProcess]:
        return start_solver_process(
            self._forks, self.memory_cap_bytes, self.prefault_bytes, on_exit=self._exited, on_free=self._freed
        )

    def _freed(self, worker: SolverProcess) -> None:
        """A working process answered its job: the longest-waiting request gets it at once."""
        if worker in self._all:
            self._idle.put(worker)

    def _exited(self, worker: SolverProcess) -> None:
        """A process exited on its own (crashed, or recycled past its memory cap), or was killed."""
        reason = RECYCLED if worker.retiring or worker.process.returncode == 0 else "died"
        self._replace(worker, reason)

    async def _start_one(self) -> None:
        """A new process: a working one when the pool is short of its size, else the spare."""
        worker = await self._spawn()
        if self._closing:
            worker.kill()
            return
        if len(self._all) < self.size:
            self._all.add(worker)
            self._idle.put(worker)
            if self._spare is None:
                self._start_in_background()
        elif self._spare is None:
            self._spare = worker
        else:
            worker.kill()

    async def close(self) -> None:
        """Stop every process: close its stdin (it exits), then kill what is left."""
        self._closing = True
        for task in list(self._starting):
            task.cancel()
        workers = list(self._all) + ([self._spare] if self._spare is not None else [])
        for worker in workers:
            if worker.process.stdin is not None:
                worker.process.stdin.close()
        await asyncio.gather(*(exit_or_kill(worker, CLOSE_WAIT_S) for worker in workers))
        if self._owns_forks:
            await self._forks.close()


def overrun_error() -> JobResult:
    return error(
        503,
        "",
        "no answer within the request's time limit plus STICKYD_RESPONSE_MARGIN_MS and "
        "STICKYD_FALLBACK_LIMIT_MS (the solver and the fallback were both late); retry with a larger time_limit_ms",
    )


def busy_error(retry_after_s: int) -> JobResult:
    return error(
        503,
        "",
        "every solver process is busy with other requests past the moment this request had to start to be "
        f"answered within its time limit; retry after {retry_after_s} s (the Retry-After header)",
    )
