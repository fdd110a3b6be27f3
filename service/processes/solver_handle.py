"""One solver process as the web process sees it: forked by the fork server (dying with the web
process, whatever kills that), a job's large body and answer passed through its memory file, its
answers read off its pipe, interrupted or killed. The pool (service/processes/pool.py) decides
which job goes to which process; the process's own side is service/processes/solver_process.py.
"""

from __future__ import annotations

import asyncio
import io
import logging
import mmap
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from stickyd.service.processes.fork_server import ForkedProcess, ForkServer
from stickyd.service.processes.job import CANCEL_SLOT, JobResult
from stickyd.service.processes.pipe_frames import HEADER, decode_frame
from stickyd.service.processes.shared_area import Shared, create_area, empty_area, put, take

log = logging.getLogger(__name__)

ProcessAnswer = tuple[JobResult | None, float]
"""A solver process's answer to one job (None when it was interrupted) and its time in ms."""


@dataclass(eq=False)
class SolverProcess:
    process: ForkedProcess
    cancel: mmap.mmap
    area: io.FileIO
    """the memory file large bodies and answers pass through (service/processes/shared_area.py)."""
    waiting: dict[int, asyncio.Future[ProcessAnswer]] = field(default_factory=dict)
    deadlines: dict[int, Callable[[float], None]] = field(default_factory=dict)
    reader: asyncio.Task[None] | None = None
    on_exit: Callable[[SolverProcess], None] = lambda _worker: None
    on_free: Callable[[SolverProcess], None] = lambda _worker: None
    """told as soon as the process has answered a job and can take the next one."""

    retiring: bool = False
    """the process said it exits after its job (past its memory cap): no further job for it."""
    area_used: bool = False
    """its current job's body went through the memory file (emptied when the job is done)."""
    writing: int = 0
    """bodies being written into the memory file now (it is closed only once none is)."""
    exited: bool = False
    killed: bool = False

    @property
    def alive(self) -> bool:
        return (
            not self.retiring
            and not self.killed
            and self.process.returncode is None
            and self.reader is not None
            and not self.reader.done()
        )

    def interrupt(self, job: int) -> None:
        self.cancel[:CANCEL_SLOT] = job.to_bytes(CANCEL_SLOT, "little")
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGUSR1)

    def kill(self) -> None:
        self.killed = True
        if self.process.returncode is None:
            self.process.kill()

    async def send_body(self, body: bytes) -> Shared:
        """A large body into the memory file. Its write is a task of its own, never cancelled
        half-way (a cancelled caller returns at once; the file is not reused or closed until the
        write is over)."""
        self.area_used = True
        self.writing += 1
        try:
            return await put(self.area, body)
        finally:
            self.writing -= 1
            if self.exited and not self.writing:
                self.area.close()

    def release_area(self) -> None:
        """The job is over: empty the memory file (and close it once the process is gone)."""
        if (self.area_used or self.exited) and not self.area.closed:
            empty_area(self.area.fileno())
        self.area_used = False
        if self.exited and not self.writing and not self.area.closed:
            self.area.close()


async def start_solver_process(
    forks: ForkServer,
    memory_cap_bytes: int,
    prefault_bytes: int = 0,
    on_exit: Callable[[SolverProcess], None] = lambda _worker: None,
    on_free: Callable[[SolverProcess], None] = lambda _worker: None,
) -> SolverProcess:
    cancel_fd = os.memfd_create("stickyd-cancel")
    os.ftruncate(cancel_fd, CANCEL_SLOT)
    area = create_area()
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    try:
        child_fds = (stdin_r, stdout_w, cancel_fd, area.fileno())
        process = await forks.start(memory_cap_bytes, prefault_bytes, child_fds, stdin_w, stdout_r)
    except BaseException:
        os.close(stdin_w)
        os.close(stdout_r)
        area.close()
        os.close(cancel_fd)
        raise
    finally:  # the child has its own copies
        os.close(stdin_r)
        os.close(stdout_w)
    worker = SolverProcess(process, mmap.mmap(cancel_fd, CANCEL_SLOT), area, on_exit=on_exit, on_free=on_free)
    os.close(cancel_fd)
    assert process.stdout is not None
    ready = await _read(process.stdout)
    if not (isinstance(ready, tuple) and ready[0] == "ready"):
        process.kill()
        raise RuntimeError("a solver process failed to start")
    worker.reader = asyncio.create_task(_read_answers(worker))
    return worker


async def _read(stream: asyncio.StreamReader) -> object:
    header = await stream.readexactly(HEADER.size)
    (size,) = HEADER.unpack(header)
    return decode_frame(await stream.readexactly(size))


async def _read_answers(worker: SolverProcess) -> None:
    assert worker.process.stdout is not None
    try:
        while True:
            message = await _read(worker.process.stdout)
            assert isinstance(message, tuple)
            if message[0] == "retiring":
                worker.retiring = True
            elif message[0] == "deadline":
                tell = worker.deadlines.get(message[1])
                if tell is not None:
                    tell(message[2])
            elif message[0] == "done":
                result = message[2]
                if isinstance(message[-1], Shared) and result is not None:  # a large answer
                    result = replace(result, body=await take(worker.area, message[-1]))
                worker.release_area()
                future = worker.waiting.pop(message[1], None)
                worker.deadlines.pop(message[1], None)
                if future is not None and not future.done():
                    future.set_result((result, message[3]))
                if worker.alive:  # free now: the next request in line gets it from here, not a task later
                    worker.on_free(worker)
    except (asyncio.IncompleteReadError, ConnectionError):
        pass  # the process exited (killed, crashed, or recycled past its memory cap)
    except (OSError, EOFError):
        log.exception("reading a solver process's answer failed; the process is stopped")
        worker.kill()
    finally:
        worker.exited = True
        worker.release_area()
        for future in worker.waiting.values():
            if not future.done():
                future.set_exception(ProcessLookupError("the solver process exited"))
        worker.waiting.clear()
        if worker.process.returncode is None:
            await worker.process.wait()
        worker.on_exit(worker)


async def exit_or_kill(worker: SolverProcess, wait_s: float) -> None:
    try:
        await asyncio.wait_for(worker.process.wait(), timeout=wait_s)
    except TimeoutError:
        worker.kill()
        await worker.process.wait()
