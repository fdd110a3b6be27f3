"""One solver process, forked by the fork server (service/processes/fork_server.py): reads jobs from
its pipe in, answers on its pipe out, one length-prefixed pickle frame each
(service/processes/pipe_frames.py).

It dies with the web process (through the fork server, PR_SET_PDEATHSIG on both), runs at a lower
CPU priority, and can be interrupted: the web process writes the job id to cancel into a shared page
and sends SIGUSR1; the job stops at its next Python bytecode and is answered as cancelled. Past its
memory cap it answers, then exits to be replaced.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import mmap
import os
import signal
import sys
import time
from dataclasses import replace
from types import FrameType
from typing import BinaryIO

from stickyd.service.processes.job import CANCEL_SLOT, JobCancelled, JobResult
from stickyd.service.processes.pipe_frames import read_frame, write_frame
from stickyd.service.processes.shared_area import SHARED_MIN_BYTES, Shared, read_area, widen_pipes, write_area
from stickyd.service.processes.solve_job import run_job, warm_up
from stickyd.solvers.time_policy import DEADLINE_TOLERANCE_S

WORKER_NICENESS = 5


class _Current:
    job = -1


def serve_jobs(
    stdin_fd: int, stdout_fd: int, cancel_fd: int, memory_cap_bytes: int, area_fd: int, prefault_bytes: int
) -> None:
    """Answer jobs from `stdin_fd` on `stdout_fd` until the web process closes the pipe in."""
    widen_pipes(stdin_fd, stdout_fd)
    _keep_freed_memory()
    _prefault(prefault_bytes)
    # frames go to their own pipe; anything a library prints goes to stderr
    frames_out = os.fdopen(stdout_fd, "wb")
    os.dup2(2, 1)
    frames_in = os.fdopen(stdin_fd, "rb")
    cancel = mmap.mmap(cancel_fd, CANCEL_SLOT)
    signal.signal(signal.SIGUSR1, lambda _s, _f: _interrupt(cancel))
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICENESS)  # the web process keeps health and metrics fast
    warm_up()
    # what is imported and warmed up stays for the process's life: the cyclic collector stops
    # rescanning it (a full collection of it took tens of ms, a stall in some unlucky request)
    gc.freeze()
    write_frame(frames_out, ("ready", os.getpid()))
    _serve(frames_in, frames_out, memory_cap_bytes, area_fd)
    frames_out.flush()
    sys.stderr.flush()
    os._exit(0)  # at once: tearing down the solvers' modules takes a loaded machine half a second


M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 1 << 30
TRIM_THRESHOLD_BYTES = 2**31 - 1


def _keep_freed_memory() -> None:
    """glibc hands a large job's big arrays back to the system when they are freed (each is its
    own mmap, and the heap's top is trimmed), and the next large job page-faults them in again:
    about 20,000 faults and 0.08-0.10 s of system CPU per 1M-partition job. Large allocations come
    from the heap and it is trimmed only past 2 GB free, so a process keeps its largest job's peak
    (about 0.5 GB at 1M partitions; STICKYD_WORKER_MEMORY_MB still replaces one above its cap)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
        libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)


PREFAULT_CHUNK_BYTES = 64 << 20
"""below MMAP_THRESHOLD_BYTES: the chunks come from the heap, which keeps them once freed."""


def _prefault(total_bytes: int) -> None:
    """STICKYD_WORKER_PREFAULT_MB: touch `total_bytes` of heap now and free it; the heap keeps it
    (`_keep_freed_memory`), so the first large job finds its pages mapped. On a VM where a page
    fault is dear this took a fresh process's first 1M job from 0.7-1.1 s to 0.41-0.45 s."""
    if total_bytes <= 0:
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        libc.malloc.restype = ctypes.c_void_p
        libc.free.argtypes = [ctypes.c_void_p]
        chunks = []
        for _ in range(max(1, total_bytes // PREFAULT_CHUNK_BYTES)):
            chunk = libc.malloc(PREFAULT_CHUNK_BYTES)
            if not chunk:
                break
            ctypes.memset(chunk, 1, PREFAULT_CHUNK_BYTES)
            chunks.append(chunk)
        for chunk in chunks:
            libc.free(chunk)


def _interrupt(cancel: mmap.mmap, _frame: FrameType | None = None) -> None:
    if _Current.job >= 0 and int.from_bytes(cancel[:CANCEL_SLOT], "little") == _Current.job:
        raise JobCancelled(_Current.job)


def _serve(frames_in: BinaryIO, frames_out: BinaryIO, memory_cap_bytes: int, area_fd: int) -> None:
    statm = os.open("/proc/self/statm", os.O_RDONLY)
    while True:
        message = read_frame(frames_in)
        if message is None:  # the parent closed our stdin: stop
            return
        _, job_id, kind, body, limits, arrived, fallback_reason, expected_deadline, live = message
        started = time.monotonic()
        if isinstance(body, Shared):  # a large body: in the memory file the parent shares
            body = read_area(area_fd, body.length)
        try:
            _Current.job = job_id

            def tell(deadline: float, job: int = job_id, expected: float = expected_deadline) -> None:
                if abs(deadline - expected) > DEADLINE_TOLERANCE_S:  # the parent guessed another limit
                    write_frame(frames_out, ("deadline", job, deadline))

            result = run_job(
                kind, body, limits, arrived=arrived, fallback_reason=fallback_reason, on_deadline=tell, live=live
            )
            _Current.job = -1
        except JobCancelled:
            _Current.job = -1
            result = None
        del body
        retiring = _resident_bytes(statm) > memory_cap_bytes
        if retiring:  # told first, so that the parent gives this process no further job
            write_frame(frames_out, ("retiring", job_id))
        result, answer = _answer_in_area(result, area_fd)
        write_frame(frames_out, ("done", job_id, result, (time.monotonic() - started) * 1000, answer))
        if retiring:
            return  # the parent sees us exit and starts a fresh process


def _answer_in_area(result: JobResult | None, area_fd: int) -> tuple[JobResult | None, Shared | None]:
    """A large answer's bytes go into the memory file (the request's bytes there are read by
    now); the frame carries the rest of the result and the marker."""
    if result is None or len(result.body) < SHARED_MIN_BYTES:
        return result, None
    return replace(result, body=b""), write_area(area_fd, result.body)


PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def _resident_bytes(statm: int) -> int:
    """Resident size, from /proc/self/statm kept open (one read per job)."""
    return int(os.pread(statm, 128, 0).split()[1]) * PAGE_BYTES
