"""HTTP load benchmark: requests/s and p50/p99 latency of `stickyd serve` on loopback under wrk
(keep-alive connections), with the CPU each request costs the web process and the solver
processes, and how fast /v1/health answers meanwhile.

    python -m bench.load                      # this tree: small and medium problems, 1 and 32 connections
    python -m bench.load --before main~3      # and the service as it was at a git revision, side by side
    python -m bench.load --quick              # shorter runs (3 s instead of 10 s)

wrk is Debian's package (`apt-get install wrk`). `--before REF` checks REF out into a temporary git
worktree and starts its `stickyd serve` from there with this Python environment; the two services
take turns on each row, so both see the same machine.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.results import write_section
from stickyd.cli.child_service import ServiceProcess, running_service
from stickyd.solvers import solve_consumer

CONNECTIONS = (1, 32)
HEALTH_EVERY_S = 0.1
REPO = Path(__file__).resolve().parent.parent


def problem(partitions: int, members: int) -> dict[str, Any]:
    """Ten topics, members subscribed to 5 to 10 of them (unequal subscriptions), no previous owners."""
    topics = {f"t{i}": partitions // 10 for i in range(10)}
    names = sorted(topics)
    members_ = [{"id": f"m{i:04d}", "topics": names[: 5 + i % 6]} for i in range(members)]
    return {"topics": topics, "members": members_, "options": {"time_limit_ms": 5000}}


def in_process_ms(body: dict[str, Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        solve_consumer(body)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


@dataclass(frozen=True)
class WrkResult:
    requests_per_s: float
    p50_ms: float
    p99_ms: float
    requests: int
    non_2xx: int


def parse_wrk(out: str) -> WrkResult:
    """wrk's `--latency` report as numbers (latencies in ms)."""

    def ms(label: str) -> float:
        value = re.search(rf"^\s+{label}\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        if value is None:
            raise ValueError(f"no {label} latency in wrk's output:\n{out}")
        return float(value.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[value.group(2)]

    rate = re.search(r"^Requests/sec:\s+([\d.]+)", out, re.M)
    total = re.search(r"^\s+(\d+) requests in ", out, re.M)
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    if rate is None or total is None:
        raise ValueError(f"no request rate in wrk's output:\n{out}")
    return WrkResult(
        requests_per_s=float(rate.group(1)),
        p50_ms=ms("50%"),
        p99_ms=ms("99%"),
        requests=int(total.group(1)),
        non_2xx=int(non_2xx.group(1)) if non_2xx else 0,
    )


def run_wrk(url: str, body: bytes, connections: int, seconds: float) -> WrkResult:
    """POST `body` to /v1/assign/consumer over `connections` keep-alive connections (one wrk thread)."""
    with tempfile.TemporaryDirectory(prefix="stickyd-wrk-") as folder:
        script = Path(folder) / "post.lua"
        script.write_text(
            f'wrk.method = "POST"\nwrk.body = {json.dumps(body.decode())}\n'
            'wrk.headers["Content-Type"] = "application/json"\n'
        )
        command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "--latency", "-s", str(script)]
        out = subprocess.run([*command, f"{url}/v1/assign/consumer"], capture_output=True, text=True, check=True).stdout
    result = parse_wrk(out)
    if result.non_2xx:
        raise RuntimeError(f"{result.non_2xx} non-2xx answers under load:\n{out}")
    return result


def cpu_seconds(pid: int) -> float:
    """User + system CPU of one process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(child) for child in found]


class HealthProbe:
    """GET /v1/health every HEALTH_EVERY_S on its own connection while the load runs."""

    def __init__(self, url: str) -> None:
        self.host, port = url.removeprefix("http://").split(":")
        self.port = int(port)
        self.times_ms: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._probe, daemon=True)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _probe(self) -> None:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=10)
        while not self._stop.wait(HEALTH_EVERY_S):
            started = time.perf_counter()
            connection.request("GET", "/v1/health")
            response = connection.getresponse()
            response.read()
            if response.status == 200:
                self.times_ms.append((time.perf_counter() - started) * 1000)
        connection.close()

    @property
    def worst_ms(self) -> float:
        return max(self.times_ms, default=float("nan"))


@dataclass(frozen=True)
class Row:
    service: str
    problem: str
    connections: int
    wrk: WrkResult
    web_cpu_ms: float
    solver_cpu_ms: float
    health_worst_ms: float
    load_average: float

    def line(self) -> str:
        w = self.wrk
        return (
            f"| {self.service} | {self.problem} | {self.connections} | {w.requests_per_s:.0f} | {w.p50_ms:.1f} | "
            f"{w.p99_ms:.1f} | {self.web_cpu_ms:.2f} | {self.solver_cpu_ms:.2f} | {self.health_worst_ms:.1f} | "
            f"{self.load_average:.1f} |"
        )


HEADER = (
    "| service | problem | connections | requests/s | p50 ms | p99 ms | web CPU ms/request | "
    "solver CPU ms/request | /v1/health worst ms | load avg (1 min) before |\n"
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def measure(name: str, service: ServiceProcess, label: str, body: bytes, connections: int, seconds: float) -> Row:
    load_average = os.getloadavg()[0]
    solvers = children(service.pid)
    web_before, solvers_before = cpu_seconds(service.pid), sum(cpu_seconds(p) for p in solvers)
    with HealthProbe(service.url) as health:
        result = run_wrk(service.url, body, connections, seconds)
    web_cpu = cpu_seconds(service.pid) - web_before
    solver_cpu = sum(cpu_seconds(p) for p in solvers) - solvers_before
    requests = max(1, result.requests)
    return Row(
        name,
        label,
        connections,
        result,
        web_cpu * 1000 / requests,
        solver_cpu * 1000 / requests,
        health.worst_ms,
        load_average,
    )


@contextmanager
def revision_tree(revision: str) -> Iterator[Path]:
    """`revision` checked out in a temporary git worktree (removed afterwards)."""
    folder = Path(tempfile.mkdtemp(prefix="stickyd-before-"))
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(folder), revision], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(folder)], check=False)
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 s per run instead of 10 s")
    parser.add_argument("--before", metavar="REF", help="also measure the service at this git revision")
    parser.add_argument("--small-only", action="store_true", help="only the small problem")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("bench.load needs wrk (Debian: apt-get install wrk)")
    seconds = 3.0 if args.quick else 10.0
    cases = [("small (100 partitions x 10 members)", problem(100, 10))]
    if not args.small_only:
        cases.append(("medium (10,000 partitions x 200 members)", problem(10_000, 200)))
    solve_ms = {label: in_process_ms(body, repeat=50) for label, body in cases}
    print(HEADER, flush=True)
    rows: list[Row] = []
    with ExitStack() as stack:
        services: list[tuple[str, ServiceProcess]] = []
        if args.before:
            tree = stack.enter_context(revision_tree(args.before))
            services.append((f"before ({args.before})", stack.enter_context(running_service(cwd=str(tree)))))
        services.append(("after (this tree)", stack.enter_context(running_service())))
        for _, service in services:  # warm: the first requests of a process import and cache
            run_wrk(service.url, json.dumps(cases[0][1]).encode(), 32, 1)
        for label, body in cases:
            payload = json.dumps(body).encode()
            for connections in CONNECTIONS:
                for name, service in services:
                    row = measure(name, service, label, payload, connections, seconds)
                    print(row.line(), flush=True)
                    rows.append(row)
    write_section("HTTP service", report(rows, solve_ms, seconds, args.before))


def report(rows: list[Row], solve_ms: dict[str, float], seconds: float, before: str | None) -> str:
    solves = "; ".join(f"{label}: {ms:.1f} ms" for label, ms in solve_ms.items())
    loads = [row.load_average for row in rows]
    side_by_side = (
        f"`before` is the service at git revision `{before}`, started from a temporary worktree with the same "
        "Python environment; the two services ran at the same time and took turns on each row."
        if before
        else "One service (this tree)."
    )
    return "\n".join(
        [
            "`stickyd serve` with default settings (one solver process per core, access log at INFO) on "
            f"127.0.0.1; load from wrk (one thread, keep-alive connections, {seconds:g} s per row) on the "
            "same machine, sharing its two cores. CPU per request is what the web process and its solver "
            "processes used during the row divided by the requests answered; `/v1/health worst` is the "
            f"slowest of the health probes sent every {HEALTH_EVERY_S * 1000:.0f} ms during the row. " + side_by_side,
            "",
            f"1-minute load average {min(loads):.1f} to {max(loads):.1f} at the rows' starts. In-process solve "
            f"(median, this tree): {solves}.",
            "",
            HEADER,
            *(row.line() for row in rows),
        ]
    )


if __name__ == "__main__":
    main()
