"""The ways a consumer request reaches the solver, each timed end to end, for bench/consumer.py.

- from a dict: `solvers.solve_consumer(problem_dict)` -> `ConsumerSolution`;
- from JSON bytes: what a solver process runs (`stickyd.service.processes.solve_job.run_job`): bytes in, parse, solve,
  the answer's JSON bytes out;
- through HTTP: a POST of the same bytes to a running `stickyd serve` on loopback, until the
  whole answer is read (httpx, one keep-alive connection);
- the fallback: `solve_consumer` told to fall back (as after the optimal solver gave up) within a
  time limit, so the KIP-54 heuristic or, when even it would be late, the quick fill answers;
- peak RSS: a fresh process that reads the request's JSON file, solves it and keeps the answer.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from stickyd.service.processes.solve_job import Limits, run_job
from stickyd.solvers import solve_consumer
from stickyd.solvers.budget import TimeBudget

BENCH_LIMITS = Limits(
    max_partitions=2_000_000, max_members=20_000, default_time_limit_ms=2_000, max_time_limit_ms=600_000
)
JSON = {"content-type": "application/json"}


@dataclass(frozen=True)
class Timed:
    seconds: float
    solver: str
    optimal: bool
    fallback: bool
    moves: int
    min_load: int
    max_load: int
    cpu: float = 0.0
    """CPU seconds of this process (0 when the work ran elsewhere, e.g. HTTP)."""


def _timed(seconds: float, stats: dict[str, Any], cpu: float = 0.0) -> Timed:
    return Timed(
        seconds,
        str(stats["solver"]),
        bool(stats["optimal"]),
        bool(stats["fallback"]),
        int(stats["moves"]),
        int(stats["min_load"]),
        int(stats["max_load"]),
        cpu,
    )


def from_dict(problem: dict[str, Any]) -> Timed:
    started, cpu = time.perf_counter(), time.process_time()
    solution = solve_consumer(problem)
    elapsed = time.perf_counter() - started
    return _timed(elapsed, solution.stats.model_dump(), time.process_time() - cpu)


def from_json_bytes(body: bytes, limits: Limits = BENCH_LIMITS) -> Timed:
    started, cpu = time.perf_counter(), time.process_time()
    result = run_job("consumer", body, limits)
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu
    if result.status != 200:
        raise RuntimeError(f"run_job answered {result.status}: {result.body[:300]!r}")
    return _timed(elapsed, json.loads(result.body)["stats"], cpu)


def through_http(client: httpx.Client, body: bytes) -> Timed:
    started = time.perf_counter()
    response = client.post("/v1/assign/consumer", content=body, headers=JSON)
    answer = response.content
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise RuntimeError(f"stickyd serve answered {response.status_code}: {answer[:300]!r}")
    return _timed(elapsed, json.loads(answer)["stats"])


def fallback_from_dict(problem: dict[str, Any], limit_ms: int) -> Timed:
    """The fallback as the dispatcher runs it after the optimal solver gave up, the whole call
    (parse, index, heuristic, answer) inside `limit_ms`."""
    request = {**problem, "options": {**problem.get("options", {}), "time_limit_ms": limit_ms}}
    started, cpu = time.perf_counter(), time.process_time()
    budget = TimeBudget.of_ms(limit_ms)
    solution = solve_consumer(request, fallback_reason="benchmark: the fallback on purpose", budget=budget)
    elapsed = time.perf_counter() - started
    return _timed(elapsed, solution.stats.model_dump(), time.process_time() - cpu)


_RSS_PROBE = """
import json, resource, sys
from stickyd.solvers import solve_consumer
with open(sys.argv[1], "rb") as f:
    problem = json.loads(f.read())
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
solution = solve_consumer(problem)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"peak_kb": after, "loaded_kb": before, "solver": solution.stats.solver,
                  "optimal": solution.stats.optimal}))
"""


def peak_rss(path: Path) -> dict[str, Any]:
    """Peak resident size (KiB) of a fresh Python process solving the request in `path`, and
    its peak before the solve (the request loaded as a dict)."""
    done = subprocess.run([sys.executable, "-c", _RSS_PROBE, str(path)], capture_output=True, check=True, text=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def own_peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
