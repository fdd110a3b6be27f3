"""One row of `python -m bench.weighted`, in a process of its own so that its peak memory is its
own: read the group, solve it one way in this process, print the figures as one JSON object.

    python -m bench.weighted.row GROUP.json load 2000

Ways (`WAYS`): `load` (balance by load, strategy optimal), `count` and `per_topic` (the other
balances, strategy optimal), `lag-greedy` (the baseline). Wall and CPU seconds are the solve call's
alone (the request already parsed); peak RSS is read before and after it.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

from bench.weighted.figures import group_of, normalized_loads, owners_of
from stickyd.solvers import solve_consumer

WAYS: dict[str, dict[str, str]] = {
    "load": {"balance": "load", "strategy": "optimal"},
    "count": {"balance": "count", "strategy": "optimal"},
    "per_topic": {"balance": "per_topic", "strategy": "optimal"},
    "lag-greedy": {"balance": "load", "strategy": "lag-greedy"},
}


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def solve_row(problem: dict[str, Any], way: str, limit_ms: int) -> dict[str, Any]:
    """Solve `problem` the named way within `limit_ms`; its time, memory and what its answer weighs."""
    body = {**problem, "options": {**WAYS[way], "time_limit_ms": limit_ms}}
    rss_before = _peak_mb()
    wall, cpu = time.perf_counter(), time.process_time()
    solution = solve_consumer(body)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    rss_after = _peak_mb()
    stats = solution.stats
    group = group_of(problem)
    loads = normalized_loads(group, owners_of(group, solution.assignment))
    out: dict[str, Any] = {
        "wall_s": wall,
        "cpu_s": cpu,
        "rss_before_mb": rss_before,
        "rss_peak_mb": rss_after,
        "bottleneck": float(loads.max()),
        "lightest": float(loads.min()),
        "moves": stats.moves,
        "solver": stats.solver,
        "optimal": stats.optimal,
        "fallback": stats.fallback,
        "unassigned": sum(len(ps) for ps in solution.unassigned.values()),
    }
    if stats.load is not None and way == "load":
        out["lower_bound"] = stats.load.lower_bound
        out["moves_lower_bound"] = stats.load.moves_lower_bound
        out["reported_max"] = stats.load.max
    return out


def main() -> None:
    path, way, limit_ms = sys.argv[1], sys.argv[2], int(sys.argv[3])
    problem = json.loads(Path(path).read_bytes())
    print(json.dumps(solve_row(problem, way, limit_ms)))


if __name__ == "__main__":
    main()
