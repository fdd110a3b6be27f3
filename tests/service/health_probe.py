"""Probe /v1/health from a process of its own (imports nothing heavy)."""

from __future__ import annotations

import time
from typing import Any

import httpx


def probe_health(url: str, ready: Any, stop: Any, out: Any) -> None:
    """/v1/health latencies every 50 ms until stopped; `ready` is set after the first one."""
    times = []
    with httpx.Client() as http:
        while not stop.is_set():
            started = time.monotonic()
            if http.get(f"{url}/v1/health").status_code == 200:
                times.append(time.monotonic() - started)
            ready.set()
            time.sleep(0.05)
    out.put(times)
