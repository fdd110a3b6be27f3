"""Start and stop a real `stickyd serve` process on a free loopback port (demo and tests)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass(frozen=True)
class ServiceProcess:
    url: str
    pid: int
    log_path: str
    """the child's stdout and stderr (its log), readable while it runs."""

    def log_text(self) -> str:
        with open(self.log_path) as log:
            return log.read()


@contextmanager
def running_service(
    env: dict[str, str] | None = None, startup_s: float = 60.0, cwd: str | None = None
) -> Iterator[ServiceProcess]:
    """A `stickyd serve` child on a free loopback port, answering /v1/health ready. `cwd` runs the
    packages of another source tree (`python -m` imports from its working directory first)."""
    port = free_port()
    child_env = {**os.environ, "STICKYD_HOST": "127.0.0.1", "STICKYD_PORT": str(port), **(env or {})}
    url = f"http://127.0.0.1:{port}"
    # the log goes to a file: a pipe that nobody reads would fill up and stall the server;
    # without a data directory of its own, the group store lives and dies with the child
    with (
        tempfile.NamedTemporaryFile(mode="w+", prefix="stickyd-serve-", suffix=".log") as log,
        tempfile.TemporaryDirectory(prefix="stickyd-data-") as data,
    ):
        child_env.setdefault("STICKYD_DATA_DIR", data)
        child = subprocess.Popen(
            [sys.executable, "-m", "stickyd.cli", "serve"], env=child_env, stdout=log, stderr=subprocess.STDOUT, cwd=cwd
        )
        try:
            _wait_ready(url, child, startup_s, log)
            yield ServiceProcess(url=url, pid=child.pid, log_path=log.name)
        finally:
            stop(child)


def stop(child: subprocess.Popen[bytes], grace_s: float = 10.0) -> None:
    """SIGTERM, then SIGKILL if it has not exited within grace_s."""
    child.terminate()
    try:
        child.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def _wait_ready(url: str, child: subprocess.Popen[bytes], startup_s: float, log: IO[str]) -> None:
    deadline = time.monotonic() + startup_s
    while time.monotonic() < deadline:
        if child.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"stickyd serve exited with {child.returncode}: {log.read()[-2000:]}")
        try:
            if httpx.get(f"{url}/v1/health", timeout=1).json().get("ready"):
                return
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"stickyd serve did not become ready within {startup_s:.0f} s")
