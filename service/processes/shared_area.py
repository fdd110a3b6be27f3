"""Large request bodies and answers between the web process and a solver process, through a
memory file the two share (one per solver process) instead of the pipe.

A 1M-partition request is 12-32 MB and its answer about 19 MB: through the 64 KB pipe and a pickle
frame each of them was pickled, cut into hundreds of pipe round trips, gathered and unpickled again
(about a quarter of a second of both processes' time). A body or answer of at least
SHARED_MIN_BYTES is instead written at offset 0 of the process's memory file (`memfd_create`:
tmpfs pages, no disk) with one `pwrite`, and the frame on the pipe carries only a `Shared` marker
with its length; the other side reads it with one `pread`. A solver process has one job at a time,
so the request's bytes are read before its answer is written over them, and the web process reads
the answer before the next job is sent. The web process empties the file after each job that used
it, so no memory stays held between jobs. Small bodies keep the pipe frame as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import io
import os
from dataclasses import dataclass
from pathlib import Path

SHARED_MIN_BYTES = 1 << 20
"""Bodies and answers from this size go through the shared memory file; smaller ones in the frame."""
F_SETPIPE_SZ = 1031
PIPE_BYTES = 1 << 20
"""The pipes' buffer (64 KB by default): a frame up to this size is one write and one read."""


@dataclass(frozen=True)
class Shared:
    """In a frame, in place of bytes: `length` bytes at offset 0 of the shared memory file."""

    length: int


def create_area() -> io.FileIO:
    """A new, empty shared memory file (the solver process inherits its descriptor)."""
    return io.FileIO(os.memfd_create("stickyd-data"), "r+", closefd=True)


def write_area(fd: int, data: bytes) -> Shared:
    view = memoryview(data)
    done = 0
    while done < len(view):
        done += os.pwrite(fd, view[done:], done)
    return Shared(len(data))


def read_area(fd: int, length: int) -> bytes:
    first = os.pread(fd, length, 0)
    if len(first) == length:
        return first
    parts, done = [first], len(first)
    while done < length:
        part = os.pread(fd, length - done, done)
        if not part:
            raise EOFError(f"the shared memory file holds {done} of {length} bytes")
        parts.append(part)
        done += len(part)
    return b"".join(parts)


def empty_area(fd: int) -> None:
    """Give the file's pages back (the next large job allocates them again)."""
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)


async def put(area: io.FileIO, data: bytes) -> Shared:
    """`data` into the file, off the event loop (pwrite releases the GIL)."""
    return await asyncio.to_thread(write_area, area.fileno(), data)


async def take(area: io.FileIO, marker: Shared) -> bytes:
    """The bytes a `Shared` marker stands for, off the event loop."""
    return await asyncio.to_thread(read_area, area.fileno(), marker.length)


def widen_pipes(*fds: int) -> None:
    """Raise each pipe's buffer to PIPE_BYTES (or the system's pipe-max-size when lower); a pipe
    the system refuses to widen keeps its size."""
    try:
        wanted = min(PIPE_BYTES, int(Path("/proc/sys/fs/pipe-max-size").read_text()))
    except (OSError, ValueError):
        wanted = PIPE_BYTES
    for fd in fds:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, F_SETPIPE_SZ, wanted)
