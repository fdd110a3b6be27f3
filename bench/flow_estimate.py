"""The consumer flow's estimate against what the flow costs (solvers/consumer/flow_estimate.py).

For Kafka-like groups with unequal subscriptions (bench/layouts.py: every layout, one member
leaves or partitions are added), from 10k to 500k partitions and 100 to 5,000 members: the CPU time
of the optimal solver's classes and flow (the least of three runs, and the last), the network's
arcs and units, and the estimate at a pace of 1 (a core to itself); the estimate must be above
the CPU time. Then how the dispatcher decides at small time limits: one request through a solver
process's job (`stickyd.service.processes.solve_job.run_job`) at several `time_limit_ms`, who answered and how long it
took.

    python -m bench.flow_estimate                  # the grid and the limits (~1 min, one core)
    python -m bench.flow_estimate --sizes 100000x1000 --no-write

Writes its tables to bench/RESULTS.md (section "Consumer flow estimate").
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from bench.layouts import contract_json_bytes, kafka_like_problem
from bench.results import write_section
from stickyd.models import ConsumerProblem, parse
from stickyd.models.consumer.index import index_consumer_problem
from stickyd.service.processes.solve_job import Limits, run_job, warm_up
from stickyd.solvers.collector import collector_paused
from stickyd.solvers.consumer.classes import build_classes
from stickyd.solvers.consumer.dispatch import _uniform_unit_weights
from stickyd.solvers.consumer.flow import solve_min_cost_flow
from stickyd.solvers.consumer.flow_estimate import network_arcs, network_units, optimal_flow_s

SIZES = ((10_000, 1_000), (100_000, 100), (100_000, 1_000), (100_000, 5_000), (200_000, 100), (500_000, 200))
LAYOUTS = ("sticky", "roundrobin", "range", "stale-dead")
EVENTS = ("leave", "partitions-added")
LIMITS_CASE = (100_000, 1_000)
LIMITS_MS = (100, 150, 175, 200, 250)
JOB_LIMITS = Limits(
    max_partitions=2_000_000, max_members=20_000, default_time_limit_ms=2_000, max_time_limit_ms=600_000
)


def flow_row(partitions: int, members: int, layout: str, event: str) -> dict[str, Any]:
    """The flow path's CPU time on one group (least of three, and the last) against its estimate."""
    problem = parse(
        ConsumerProblem, kafka_like_problem(partitions, members, layout=layout, shape="unequal", event=event)
    )
    cpu: list[float] = []
    with collector_paused():
        index = index_consumer_problem(problem)
        for _ in range(3):
            started = time.process_time()
            weights = _uniform_unit_weights(index)
            if weights is None:
                raise RuntimeError("a Kafka-like group mixes unit weights")
            solve_min_cost_flow(index, build_classes(index), weights, max_imbalance=0, deadline=time.monotonic() + 600)
            cpu.append(time.process_time() - started)
    arcs, units = network_arcs(index), network_units(index)
    return {"arcs": arcs, "units": units, "cpu_s": max(min(cpu), cpu[-1]), "estimate_s": optimal_flow_s(arcs, units)}


def limit_row(body: bytes) -> dict[str, Any]:
    started = time.perf_counter()
    result = run_job("consumer", body, JOB_LIMITS)
    stats = json.loads(result.body)["stats"]
    return {"seconds": time.perf_counter() - started, "solver": stats["solver"], "optimal": stats["optimal"]}


def _load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(f"{p}x{m}" for p, m in SIZES), help="e.g. 100000x1000")
    parser.add_argument("--note", default="", help="what else ran on the machine")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]
    warm_up()
    start_load = _load()
    lines = [
        "| size (P x M) | layout | event | arcs | units | flow CPU ms | estimate ms (pace 1) | CPU / estimate |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    worst = 0.0
    for partitions, members in sizes:
        for layout in LAYOUTS:
            for event in EVENTS:
                row = flow_row(partitions, members, layout, event)
                ratio = row["cpu_s"] / row["estimate_s"]
                worst = max(worst, ratio)
                lines.append(
                    f"| {partitions:,} x {members:,} | {layout} | {event} | {row['arcs']:,} | {row['units']:,} "
                    f"| {row['cpu_s'] * 1000:.1f} | {row['estimate_s'] * 1000:.1f} | {ratio:.2f} |"
                )
                print(lines[-1], flush=True)
    partitions, members = LIMITS_CASE
    problem = kafka_like_problem(partitions, members, layout="sticky", shape="unequal", event="leave")
    limits = [
        "",
        f"One {partitions:,} x {members:,} request (sticky layout, a member left, unequal subscriptions) as a "
        "solver process's job (`run_job`: bytes in, answer bytes out), the better of two runs:",
        "",
        "| time_limit_ms | answered by | proven | job s |",
        "|---:|---|---|---:|",
    ]
    for limit_ms in LIMITS_MS:
        request = contract_json_bytes({**problem, "options": {"time_limit_ms": limit_ms}})
        best = min((limit_row(request) for _ in range(2)), key=lambda r: r["seconds"])
        limits.append(
            f"| {limit_ms} | {best['solver']} | {'yes' if best['optimal'] else 'no'} | {best['seconds']:.3f} |"
        )
        print(limits[-1], flush=True)
    text = "\n".join(
        [
            f"Load average at the start {start_load}, at the end {_load()}. {args.note}".strip(),
            "",
            "The optimal solver's flow (classes, flow, counts back to units; this process's CPU time) against "
            "`solvers/consumer/flow_estimate.py`'s estimate at a pace of 1 (a core to itself; the dispatcher "
            "multiplies it by the pace it measures during each request). Kafka-like groups, unequal "
            f"subscriptions. Largest CPU / estimate: **{worst:.2f}** (the estimate must stay above 1).",
            "",
            *lines,
            *limits,
        ]
    )
    if not args.no_write:
        write_section("Consumer flow estimate", text)


if __name__ == "__main__":
    main()
