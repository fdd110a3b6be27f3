"""Time limits under load: does a real `stickyd serve` answer every request within
max(time_limit_ms, the size's floor) + the response margin?

For each size class (bench/limit_cases.py: consumer groups of 1k, 100k and 1M partitions, Streams
applications of 10k and 200k tasks) and each time_limit_ms in {50, 200, 1000}, the request is sent
alone and then 8 at once (8 connections); per row: the worst response time seen by the client
(sending the body included) against the promise, fallbacks, 503s, invalid answers (shared
validators) and the peak RSS of the service's processes (web process + solver processes, sampled).
Then the cancellation: how soon a request is answered after a client abandoned a big solve.
`--floor` instead measures what reading, parsing and answering costs: each class alone with
time_limit_ms 1 (the cheapest valid answer the service gives), several times.

    python -m bench.limits                                   # all classes (~10 min)
    python -m bench.limits --classes consumer-1k,streams-10k
    python -m bench.limits --floor --repeat 5
    python -m bench.limits --classes consumer-1M --limits 1000 --at-once 1,2,3,4,8   # capacity

Writes its table to stdout and to bench/RESULTS.md (section "Time limits under load", or
"Floor per size" with --floor).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.limit_cases import DEFAULT_CLASSES, SIZE_CLASSES, SizeClass, Validator, with_time_limit
from bench.results import write_section
from stickyd.cli.child_service import ServiceProcess, running_service
from stickyd.service.admission.promise_floor import floor_ms
from stickyd.service.settings import Settings

LIMITS_MS = (50, 200, 1000)
CONCURRENCY = (1, 8)
RSS_EVERY_S = 0.1
CLIENT_TIMEOUT_S = 300.0
CANCEL_TARGET_MS = 250
JSON = {"content-type": "application/json"}
FLOOR_OFF = {"STICKYD_FLOOR_SCALE": "0", "STICKYD_RESPONSE_MARGIN_MS": "600000"}
"""--floor: no floor, and a margin so long that the solver process itself answers the spent budget."""


def service_pids(pid: int) -> list[int]:
    """The service's process and every process under it (its fork server and the solver processes
    the fork server starts)."""
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [pid, *(one for child in found for one in service_pids(int(child)))]


def service_cpu_s(pid: int) -> float:
    """User + system CPU so far of the service's web process, its fork server and its live solver
    processes."""
    total = 0.0
    for one in service_pids(pid):
        try:
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class RssSampler:
    """The service's processes' resident memory every RSS_EVERY_S: the largest sum and the
    largest single process seen."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_sum_kb = 0
        self.peak_one_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _sample(self) -> None:
        while not self._stop.is_set():
            sizes = [rss_kb(pid) for pid in service_pids(self.pid)]
            self.peak_sum_kb = max(self.peak_sum_kb, sum(sizes))
            self.peak_one_kb = max(self.peak_one_kb, max(sizes, default=0))
            self._stop.wait(RSS_EVERY_S)


@dataclass
class Answer:
    status: int
    ms: float
    body: bytes
    fallback: bool = False
    warnings: list[str] = field(default_factory=list)


def post(url: str, kind: str, body: bytes) -> Answer:
    with httpx.Client(timeout=CLIENT_TIMEOUT_S) as http:
        started = time.monotonic()
        try:
            response = http.post(f"{url}/v1/assign/{kind}", content=body, headers=JSON)
        except httpx.HTTPError:
            return Answer(0, (time.monotonic() - started) * 1000, b"")
        ms = (time.monotonic() - started) * 1000
    answer = Answer(response.status_code, ms, response.content)
    if response.status_code == 200:
        stats = json.loads(response.content)["stats"]
        answer.fallback, answer.warnings = bool(stats.get("fallback")), list(stats.get("warnings", []))
    return answer


@dataclass
class Row:
    size: SizeClass
    body_bytes: int
    limit_ms: int
    concurrency: int
    floor_ms: int
    margin_ms: int
    answers: list[Answer]
    invalid: int
    peak_sum_kb: int
    peak_one_kb: int

    @property
    def promise_ms(self) -> int:
        return max(self.limit_ms, self.floor_ms) + self.margin_ms

    @property
    def worst_ms(self) -> float:
        return max(a.ms for a in self.answers)

    @property
    def misses(self) -> int:
        return sum(1 for a in self.answers if a.ms > self.promise_ms or a.status != 200)

    @property
    def late(self) -> int:
        """answers of any status (a 503 with Retry-After included) after the promise."""
        return sum(1 for a in self.answers if a.ms > self.promise_ms)

    def line(self) -> str:
        statuses = [a.status for a in self.answers]
        other = sum(1 for s in statuses if s not in (200, 503))
        return (
            f"| {self.size.name} | {self.body_bytes / 1e6:.2f} MB | {self.limit_ms} | {self.concurrency} | "
            f"{self.floor_ms} | {self.promise_ms} | {self.worst_ms:.0f} | {self.misses} | {self.late} | "
            f"{sum(a.fallback for a in self.answers)} | {statuses.count(503)} | {other} | {self.invalid} | "
            f"{self.peak_sum_kb / 2**20:.2f} / {self.peak_one_kb / 2**20:.2f} |"
        )


HEADER = (
    "| class | body | time_limit_ms | at once | floor ms | promise ms | worst ms | misses | late | fallbacks | 503 | "
    "other | invalid | peak RSS GB (all / largest process) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def run_row(
    service: ServiceProcess, size: SizeClass, problem: dict[str, Any], validator: Validator, limit_ms: int, at_once: int
) -> Row:
    body = with_time_limit(problem, limit_ms)
    margin_ms = Settings().response_margin_ms
    with RssSampler(service.pid) as rss, ThreadPoolExecutor(at_once) as pool:
        answers = list(pool.map(lambda _: post(service.url, size.kind, body), range(at_once)))
    invalid = sum(1 for a in answers if a.status == 200 and validator.violations(a.body))
    return Row(
        size,
        len(body),
        limit_ms,
        at_once,
        floor_ms(size.kind, size.units, len(body)),
        margin_ms,
        answers,
        invalid,
        rss.peak_sum_kb,
        rss.peak_one_kb,
    )


CANCEL_BUSY = SizeClass("consumer-200k", "consumer", 200_000, 2_000)
SMALL = b'{"topics":{"t":4},"members":[{"id":"a","topics":["t"]}],"options":{"time_limit_ms":5000}}'


def cancellation_ms(trials: int) -> list[float]:
    """A client sends a 200k-partition request (30 s limit) to a service with one solver process
    and goes away 0.5 s later; how long until the next small request is answered (the solve is
    interrupted, or its process killed and the warm spare takes over)."""
    body = with_time_limit(CANCEL_BUSY.problem(), 30_000)
    waits = []
    with running_service({"STICKYD_AUTH": "off", "STICKYD_WORKERS": "1", "STICKYD_LOG_LEVEL": "warning"}) as service:
        host, port = service.url.removeprefix("http://").split(":")
        for _ in range(trials):
            with socket.create_connection((host, int(port)), timeout=10) as sock:
                head = (
                    "POST /v1/assign/consumer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n"
                )
                sock.sendall(head.encode() + body)
                time.sleep(0.5)
            gone = time.monotonic()
            answer = post(service.url, "consumer", SMALL)
            waits.append((time.monotonic() - gone) * 1000 if answer.status == 200 else float("inf"))
            time.sleep(2)  # a replaced process's new spare is warm again
    return waits


def load_average() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def limits_report(rows: list[Row], started_load: str, env: dict[str, str], waits: list[float] | None = None) -> str:
    misses = [r for r in rows if r.misses]
    said = "\n".join(
        f"- MISS {r.size.name} at {r.limit_ms} ms x {r.concurrency}: {r.misses} of {len(r.answers)} answers "
        f"over {r.promise_ms} ms or not 200 (worst {r.worst_ms:.0f} ms)"
        for r in misses
    )
    return f"""System load average (1/5/15 min) {started_load} at the start,
{load_average()} at the end. Service: `stickyd serve` with {env or "default settings"}
(solver processes = cores, one fallback process, response margin {rows[0].margin_ms if rows else 250} ms).

Each row: one body sent `at once` times on separate connections; times are the client's, from
sending the request to the last byte of the answer. The promise is max(time_limit_ms, floor) +
margin (the floor: `service/admission/promise_floor.py`, README "Floor per size"). Misses count answers over the
promise or not 200; `late`: answers of any status over the promise (a 503 with Retry-After given
at once, when no solver process could take the request in time, is a miss but not late);
`invalid`: 200 answers the shared validators reject; peak RSS sampled every
{RSS_EVERY_S * 1000:.0f} ms over the web process and its solver processes.

{HEADER}
{chr(10).join(r.line() for r in rows)}

{said or "No misses."}
{_cancellation_text(waits) if waits else ""}"""


def _cancellation_text(waits: list[float]) -> str:
    over = sum(1 for w in waits if w > CANCEL_TARGET_MS)
    return f"""
Cancellation: a client that goes away 0.5 s into a 200k-partition solve (one solver process); the
next small request was answered after {", ".join(f"{w:.0f}" for w in waits)} ms ({len(waits)} trials;
target {CANCEL_TARGET_MS} ms{f", MISS in {over}" if over else ", met"}; the process is interrupted, or killed
and replaced by the warm spare when its solve is in native code).
"""


def floor_report(rows: list[tuple[SizeClass, int, list[float], list[float], int]], started_load: str) -> str:
    lines = "\n".join(
        f"| {size.name} | {size.units:,} x {size.people:,} | {body / 1e6:.2f} MB | {min(ms):.0f} | "
        f"{sorted(ms)[len(ms) // 2]:.0f} | {max(ms):.0f} | {sorted(cpu)[len(cpu) // 2]:.0f} | {floor} |"
        for size, body, ms, cpu, floor in rows
    )
    return f"""System load average {started_load} at the start, {load_average()} at the end.

What merely reading, parsing and answering costs: each class alone with `time_limit_ms: 1` and
the floor turned off (`STICKYD_FLOOR_SCALE=0`, and `STICKYD_RESPONSE_MARGIN_MS=600000` so that
the solver process itself answers: it answers a spent budget with its cheapest valid answer, the
quick fill or the Streams sticky heuristic), times from the client, in ms; CPU: the median CPU
time the service's processes (web and solver) spent on one such request, which a busy machine
does not inflate; `floor` is what `service/admission/promise_floor.py` gives the size.

| class | units x people | body | min | median | max | CPU ms | floor ms |
|---|---|---|---|---|---|---|---|
{lines}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--classes", default=",".join(DEFAULT_CLASSES), help=f"of {', '.join(SIZE_CLASSES)}")
    parser.add_argument("--limits", default=",".join(map(str, LIMITS_MS)))
    parser.add_argument("--floor", action="store_true", help="measure the floor instead (time_limit_ms 1, alone)")
    parser.add_argument("--repeat", type=int, default=3, help="--floor: requests per class")
    parser.add_argument("--cancel-trials", type=int, default=5, help="disconnect trials (0: none)")
    parser.add_argument(
        "--at-once", default=",".join(map(str, CONCURRENCY)), help="requests sent together, e.g. 1,2,4,8 (capacity)"
    )
    parser.add_argument("--no-write", action="store_true", help="print only; leave bench/RESULTS.md alone")
    args = parser.parse_args()
    sizes = [SIZE_CLASSES[name] for name in args.classes.split(",")]
    limits = [int(x) for x in args.limits.split(",")]
    concurrency = [int(x) for x in args.at_once.split(",")]
    env = {"STICKYD_AUTH": "off", "STICKYD_LOG_LEVEL": "warning"}
    started_load = load_average()
    if args.floor:
        floors = []
        with running_service({**env, **FLOOR_OFF}) as service:
            for size in sizes:
                problem = size.problem()
                body = with_time_limit(problem, 1)
                times, cpu = [], []
                for _ in range(args.repeat):
                    before = service_cpu_s(service.pid)
                    times.append(post(service.url, size.kind, body).ms)
                    cpu.append((service_cpu_s(service.pid) - before) * 1000)
                floors.append((size, len(body), times, cpu, floor_ms(size.kind, size.units, len(body))))
                print(size.name, len(body), [round(t) for t in times], [round(c) for c in cpu], flush=True)
        text = floor_report(floors, started_load)
        print(text)
        if not args.no_write:
            write_section("Floor per size", text)
        return
    rows: list[Row] = []
    with running_service(env) as service:
        for size in sizes:
            problem = size.problem()
            validator = Validator(size.kind, problem)
            for limit_ms in limits:
                for at_once in concurrency:
                    rows.append(run_row(service, size, problem, validator, limit_ms, at_once))
                    print(rows[-1].line(), flush=True)
    waits = cancellation_ms(args.cancel_trials) if args.cancel_trials else None
    text = limits_report(rows, started_load, {k: v for k, v in env.items() if k != "STICKYD_LOG_LEVEL"}, waits)
    print(text)
    if not args.no_write:
        write_section("Time limits under load", text)


if __name__ == "__main__":
    main()
