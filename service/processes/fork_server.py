"""The fork server: one process that imports the solvers once and forks every solver process from
itself, so a new solver process is ready in milliseconds instead of importing them again.

A fresh interpreter importing OR-Tools, numpy, scipy and pandas takes about 3 s of CPU; the service
starts five solver processes (the working ones, the fallback's and the two warm spares), which on
two cores would keep `stickyd serve` from being ready for 7-8 s and make every replacement of a
dead process a 3 s start. The fork server pays that import once, while the web process imports its
own libraries on the other core.

The web process (`ForkServer`) talks to it over a socket pair: a request carries the new process's
settings and its four descriptors (SCM_RIGHTS), the answer its pid; the fork server also reports
each child's exit code, since only it can reap them (`ForkedProcess.wait`).

Both die with the web process, whatever kills it: the fork server by PR_SET_PDEATHSIG set before it
runs, each solver process by the same signal set right after the fork (checked against a parent that
died in between). The fork server stops when the web process closes its end of the socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

PR_SET_PDEATHSIG = 1
REQUEST = struct.Struct("<qq")
"""a fork request: the new process's memory cap and prefault, in bytes."""
REPORT = struct.Struct("<cqq")
"""b"f" (forked: pid, 0) or b"x" (exited: pid, exit code, negative for a signal)."""
SPAWN_WAIT_S = 2.0


def die_with_parent() -> None:
    """PR_SET_PDEATHSIG: this process gets SIGKILL when its parent dies."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class ForkServerExited(Exception):
    """The fork server exited before it answered a fork request."""


@dataclass(eq=False)
class ForkedProcess:
    """A solver process as the web process holds it (the shape of asyncio's subprocess handle)."""

    pid: int
    stdin: asyncio.StreamWriter
    stdout: asyncio.StreamReader
    exit_code: asyncio.Future[int]

    @property
    def returncode(self) -> int | None:
        return self.exit_code.result() if self.exit_code.done() else None

    async def wait(self) -> int:
        return await asyncio.shield(self.exit_code)

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class ForkServer:
    """The web process's side: starts the fork server, asks it for processes, hears their exits.

    `spawn()` may run before the event loop does (the CLI starts it first, so that its imports
    overlap the web process's own); a fork server that died is started again on the next fork."""

    def __init__(self) -> None:
        self._server: subprocess.Popen[bytes] | None = None
        self._socket: socket.socket | None = None
        self._reader: asyncio.Task[None] | None = None
        self._forking: deque[asyncio.Future[tuple[int, asyncio.Future[int]]]] = deque()
        self._exits: dict[int, asyncio.Future[int]] = {}

    def spawn(self) -> None:
        if self._server is not None:
            return
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with theirs:
            self._server = subprocess.Popen(
                [sys.executable, "-m", "stickyd.service.processes.fork_server", str(theirs.fileno()), str(os.getpid())],
                stdin=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                preexec_fn=die_with_parent,
            )
        ours.setblocking(False)
        self._socket = ours

    async def start(
        self, memory_cap_bytes: int, prefault_bytes: int, child_fds: tuple[int, int, int, int], stdin: int, stdout: int
    ) -> ForkedProcess:
        """A new solver process given `child_fds` (its stdin, its stdout, the cancel page, the memory
        file), held through the pipes' other ends `stdin` and `stdout` (the handle owns them once
        this returns). It says "ready" on its stdout once warmed up."""
        request = REQUEST.pack(memory_cap_bytes, prefault_bytes)
        asked = await self._running()
        try:
            pid, exit_code = await self._fork(request, child_fds)
        except (OSError, ForkServerExited):  # it died (and its children with it): once more, on a new one
            if self._server is asked:  # not replaced by another caller meanwhile
                await self.close()
            await self._running()
            pid, exit_code = await self._fork(request, child_fds)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(stdout, "rb", 0))
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), os.fdopen(stdin, "wb", 0)
        )
        return ForkedProcess(pid, asyncio.StreamWriter(transport, protocol, None, loop), reader, exit_code)

    async def _running(self) -> subprocess.Popen[bytes] | None:
        """The fork server, started (again, if it died) and heard."""
        if self._reader is not None and self._reader.done():  # the fork server died: a new one
            await self.close()
        self.spawn()
        assert self._socket is not None
        if self._reader is None:
            self._reader = asyncio.create_task(self._read_reports(self._socket))
        return self._server

    async def _fork(self, request: bytes, child_fds: tuple[int, int, int, int]) -> tuple[int, asyncio.Future[int]]:
        assert self._socket is not None
        forked: asyncio.Future[tuple[int, asyncio.Future[int]]] = asyncio.get_running_loop().create_future()
        self._forking.append(forked)
        try:
            socket.send_fds(self._socket, [request], list(child_fds))
        except OSError:
            self._forking.remove(forked)
            raise
        return await forked

    async def _read_reports(self, ours: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        try:
            while report := await loop.sock_recv(ours, REPORT.size):
                kind, pid, code = REPORT.unpack(report)
                if kind == b"f":
                    self._exits[pid] = loop.create_future()
                    forked = self._forking.popleft()
                    if not forked.done():  # else its caller gave up (the pool closed): the process
                        forked.set_result((pid, self._exits[pid]))  # finds its pipes closed and exits
                elif pid in self._exits:
                    self._exits.pop(pid).set_result(code)
        except OSError:
            pass
        finally:  # the fork server is gone, and its children with it (PR_SET_PDEATHSIG)
            while self._forking:
                forked = self._forking.popleft()
                if not forked.done():
                    forked.set_exception(ForkServerExited())
            for exit_code in self._exits.values():
                if not exit_code.done():
                    exit_code.set_result(-signal.SIGKILL)
            self._exits.clear()

    async def close(self) -> None:
        """Close the socket (the fork server stops), wait for it, kill it if it does not stop."""
        server, ours, reader = self._server, self._socket, self._reader
        self._server = self._socket = self._reader = None
        if ours is not None:
            ours.close()
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        if server is not None:
            try:
                await asyncio.to_thread(server.wait, SPAWN_WAIT_S)
            except subprocess.TimeoutExpired:
                server.kill()
                await asyncio.to_thread(server.wait)


def main() -> None:
    """The fork server itself: import the solvers, then fork a solver process per request."""
    server = socket.socket(fileno=int(sys.argv[1]))
    if os.getppid() != int(sys.argv[2]):  # the web process died before PR_SET_PDEATHSIG was in force
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a ^C stops the web process, which stops this one
    from stickyd.service.processes.solver_process import serve_jobs

    gc.freeze()  # what every child shares stays untouched by their collectors (copy-on-write)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda _s, _f: None)
    waiting = selectors.DefaultSelector()
    waiting.register(server, selectors.EVENT_READ)
    waiting.register(wake_r, selectors.EVENT_READ)
    me = os.getpid()
    while True:
        for key, _ in waiting.select():
            if key.fileobj is server:
                request, fds, _flags, _address = socket.recv_fds(server, REQUEST.size, 4)
                if not request:  # the web process closed its end: stop at once (no module teardown)
                    os._exit(0)
                memory_cap_bytes, prefault_bytes = REQUEST.unpack(request)
                pid = os.fork()
                if pid == 0:
                    server.close()
                    os.close(wake_r)
                    os.close(wake_w)
                    _run_child(me, serve_jobs, fds, memory_cap_bytes, prefault_bytes)
                for fd in fds:
                    os.close(fd)
                server.send(REPORT.pack(b"f", pid, 0))
            else:
                os.read(wake_r, 512)
        _report_exits(server)


def _run_child(
    parent: int, serve_jobs: Callable[..., None], fds: list[int], memory_cap_bytes: int, prefault_bytes: int
) -> None:
    """In the new solver process: the fork server's signal handling undone, then its jobs."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    code = 1
    try:
        die_with_parent()
        if os.getppid() == parent:  # else the fork server died before PR_SET_PDEATHSIG was in force
            stdin_fd, stdout_fd, cancel_fd, area_fd = fds
            serve_jobs(stdin_fd, stdout_fd, cancel_fd, memory_cap_bytes, area_fd, prefault_bytes)
            code = 0
    except BrokenPipeError:
        code = 0  # the web process gave this process up before it was ready
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(code)


def _report_exits(server: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        server.send(REPORT.pack(b"x", pid, os.waitstatus_to_exitcode(status)))


if __name__ == "__main__":
    main()
