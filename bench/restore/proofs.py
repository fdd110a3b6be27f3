"""Streams with restore costs: how often `optimal` is proven, and in what time, on applications
whose tasks cost up to 10^9 to restore.

    python -m bench.restore.proofs            # 400 x 10 and 1,000 x 20, 10 seeds each
    python -m bench.restore.proofs --quick    # 400 x 10, 2 seeds

Two kinds of previous assignment: `scrambled` (owners and standbys at random, unbalanced: many
actives must move) and bench.streams' scenarios (an optimal target, then one event).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

from bench.results import write_section
from bench.streams import scenario
from stickyd.solvers import solve_streams

SIZES = [(400, 10), (1_000, 20)]
QUICK_SIZES = [(400, 10)]
KINDS = ["scrambled", "join", "leave", "scale-out by half"]
TOP_COST = 10**9
TIME_LIMIT_MS = 30_000


def scrambled(tasks: int, clients: int, seed: int) -> dict[str, Any]:
    """Previous owners at random, one standby of each stateful task on another client."""
    rng = random.Random(f"scrambled-{tasks}-{clients}-{seed}")
    subtopologies = [{"id": str(s), "partitions": tasks // 10, "stateful": s < 7} for s in range(10)]
    held: list[dict[str, list[str]]] = [{"active": [], "standby": []} for _ in range(clients)]
    for s in subtopologies:
        for p in range(s["partitions"]):
            owner = rng.randrange(clients)
            held[owner]["active"].append(f"{s['id']}_{p}")
            if s["stateful"]:
                other = rng.choice([j for j in range(clients) if j != owner])
                held[other]["standby"].append(f"{s['id']}_{p}")
    config = {"num_standby_replicas": 1, "max_warmup_replicas": 2, "acceptable_recovery_lag": 100}
    return {
        "subtopologies": subtopologies,
        "clients": [{"id": f"client-{j:04d}", **h} for j, h in enumerate(held)],
        "config": config,
    }


def probe(kind: str, tasks: int, clients: int, seed: int) -> dict[str, Any]:
    """The application of `kind` with a restore cost from 0 to 10^9 on every task."""
    problem = scrambled(tasks, clients, seed) if kind == "scrambled" else scenario(tasks, clients, kind)
    rng = random.Random(f"costs-{kind}-{tasks}-{clients}-{seed}")
    names = [f"{s['id']}_{p}" for s in problem["subtopologies"] for p in range(s["partitions"])]
    return {
        **problem,
        "task_costs": {name: rng.randint(0, TOP_COST) for name in names},
        "options": {"stickiness": "restore_cost", "time_limit_ms": TIME_LIMIT_MS},
    }


def row(kind: str, tasks: int, clients: int, seeds: int) -> str:
    """One table row: proven share, solvers that answered, median and slowest time."""
    times, proven, solvers = [], 0, set()
    for seed in range(seeds):
        problem = probe(kind, tasks, clients, seed)
        started = time.perf_counter()
        stats = solve_streams(problem).stats
        times.append(time.perf_counter() - started)
        proven += stats.optimal
        solvers.add(stats.solver)
    return (
        f"| {tasks:,} x {clients:,} | {kind} | {proven}/{seeds} | {', '.join(sorted(solvers))} | "
        f"{statistics.median(times):.2f} s | {max(times):.2f} s |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=None)
    args = parser.parse_args()
    seeds = args.seeds or (2 if args.quick else 10)
    header = (
        "| size (tasks x clients) | previous assignment | proven | solver | median | slowest |\n"
        "|---|---|---:|---|---:|---:|"
    )
    print(header, flush=True)
    rows = []
    for tasks, clients in QUICK_SIZES if args.quick else SIZES:
        for kind in KINDS:
            line = row(kind, tasks, clients, seeds)
            print(line, flush=True)
            rows.append(line)
    write_section(
        "Kafka Streams, moves weighed by restore cost",
        "\n".join(
            [
                f"Ten subtopologies (seven stateful), one standby replica, restore costs from 0 to {TOP_COST:,},",
                f"`time_limit_ms` {TIME_LIMIT_MS:,}; {seeds} seeds per row. `proven`: stats.optimal; `solver`:",
                "`cp-sat` where the certificate found standbys better than the flows' (and proved them).",
                "",
                header,
                *rows,
            ]
        ),
    )


if __name__ == "__main__":
    main()
