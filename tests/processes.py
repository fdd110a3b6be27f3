"""Finding the processes a test started, wherever they ended up: every child inherits an
environment marker, so a process still alive with the marker after its test is a leftover (also
after it was re-parented to PID 1)."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

MARK = "STICKYD_TEST_MARK"


def new_mark() -> str:
    return uuid.uuid4().hex


def marked(mark: str, *, exclude: set[int] | None = None) -> dict[int, str]:
    """pid -> command line of every live process whose environment carries MARK=mark."""
    needle = f"{MARK}={mark}".encode()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in (exclude or set()):
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            if state == "Z":  # exited, waiting for its parent to reap it
                continue
            found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
    return found


def wait_until_none_marked(mark: str, timeout_s: float, *, exclude: set[int] | None = None) -> dict[int, str]:
    """The marked processes still alive after up to `timeout_s` (empty when all are gone)."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = marked(mark, exclude=exclude)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.02)


def this_process() -> set[int]:
    return {os.getpid()}


def children(pid: int) -> set[int]:
    """The live children of `pid`."""
    try:
        return {int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}
    except OSError:
        return set()


FORK_SERVER = b"stickyd.service.processes.fork_server"


def fork_servers(service_pid: int) -> set[int]:
    """The fork server of a `stickyd serve` (a set: empty while none runs)."""
    return {pid for pid in children(service_pid) if FORK_SERVER in _cmdline(pid)}


def solver_processes(service_pid: int) -> set[int]:
    """Every solver process of a `stickyd serve` (working, warm spare, fallback): the children of its
    fork server."""
    return {pid for server in fork_servers(service_pid) for pid in children(server)}


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
